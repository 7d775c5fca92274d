import { ConfigurationError } from "@sluice/core";
import { Configuration, JobGraph, type Task, type TaskInvokable } from "@sluice/runtime";
import { HighAvailabilityOptions, NetworkMemoryOptions } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import type { RegisteredTaskManager } from "./registered-task-manager.js";
import { TaskManager } from "./task-manager.js";
import { numbersJob } from "./test-support/number-tasks.js";
import { until } from "./test-support/raw-control-client.js";
import {
  closeTestCluster,
  LOADER,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

afterEach(closeTestCluster);

const RECORDS_PER_SOURCE = 20_000;

/** Numbers → Sum over a keyed exchange, and a task that runs until it is canceled. */
const invokables: Readonly<Record<string, TaskInvokable<Task>>> = {
  numbers: async (task) => {
    const writer = task.writer<number>();
    for (let i = 0; i < RECORDS_PER_SOURCE; i++) {
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.emit(i);
    }
    return RECORDS_PER_SOURCE;
  },
  sum: async (task) => {
    let count = 0;
    let sum = 0;
    for await (const value of task.reader<number>()) {
      count++;
      sum += value;
    }
    return { count, sum };
  },
  waitForCancel: (task) =>
    new Promise<undefined>((resolve) =>
      task.signal.addEventListener("abort", () => resolve(undefined)),
    ),
};

describe("a task manager", () => {
  it("registers with the job manager, runs the tasks deployed onto it, and reports every network buffer back in its pool when shut down", async () => {
    // The job manager's own host keys stay on its host: the task managers announce their own,
    // and find etcd with their own files when they register again.
    const jobManager = await startJobManager({
      "taskmanager.host": "192.0.2.1",
      "high-availability.etcd.ssl.ca": "/etc/job-manager-only/etcd-ca.crt",
    });
    // The first serves its metrics for Prometheus (any free port), and says where.
    const prometheus = {
      "metrics.reporter.prom.factory.class": "prometheus",
      "metrics.reporter.prom.port": 0,
    };
    const taskManagers = await Promise.all(
      [0, 1].map((i) =>
        startTaskManager(
          jobManager,
          { "taskmanager.network.memory.buffers-per-channel": 3, ...(i === 0 ? prometheus : {}) },
          { invokables, onShutdown: ({ reason }) => ({ goodbye: reason }) },
        ),
      ),
    );
    const served = taskManagers[0]?.executor.metricGroup.registry.endpoints() ?? [];
    expect(served).toEqual([
      { reporter: "prom", url: expect.stringMatching(/^http:\/\/.+:\d+\/metrics$/) },
    ]);
    const registrationOf = (tm: { index: number }) =>
      jobManager.taskManagers.find((registered) => registered.index === tm.index);
    expect(registrationOf(taskManagers[0] as TaskManager)?.metricEndpoints).toEqual(served);
    expect(registrationOf(taskManagers[1] as TaskManager)?.metricEndpoints).toEqual([]);
    for (const taskManager of taskManagers) {
      // The job manager's configuration, with the task manager's own keys on top.
      const { configuration } = taskManager;
      expect(configuration.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE)).toBe(16 * 1024);
      expect(configuration.get(NetworkMemoryOptions.NETWORK_BUFFERS_PER_CHANNEL)).toBe(3);
      expect(taskManager.executor.location.host).toBe("127.0.0.1");
      expect(configuration.getOptional(HighAvailabilityOptions.HA_ETCD_SSL_CA)).toBeUndefined();
    }
    expect(taskManagers.map((tm) => tm.index).sort()).toEqual([0, 1]);

    const execution = await jobManager.deploy(numbersJob("numbers"));
    const gateways = new Set(execution.executionVertices.map((vertex) => vertex.gateway));
    expect(gateways).toEqual(new Set(jobManager.taskManagers));
    const result = await execution.terminated;
    expect(result.status, String(result.error)).toBe("FINISHED");
    const sums = (result.results.get("Sum") ?? []) as { count: number; sum: number }[];
    expect(sums.reduce((total, s) => total + s.count, 0)).toBe(2 * RECORDS_PER_SOURCE);
    expect(sums.reduce((total, s) => total + s.sum, 0)).toBe(
      RECORDS_PER_SOURCE * (RECORDS_PER_SOURCE - 1),
    );

    const reports = await jobManager.shutDownTaskManagers({ reason: "the job finished" });
    expect(reports.size).toBe(2);
    for (const report of reports.values()) {
      expect(report).not.toBeInstanceOf(Error);
      expect(report).toMatchObject({
        unreleasedPartitions: 0,
        application: { goodbye: "the job finished" },
      });
      // The process's peak resident set size: this test process's, at least its heap.
      expect((report as { peakRssBytes?: number }).peakRssBytes).toBeGreaterThan(
        process.memoryUsage().heapUsed,
      );
      const buffers = (report as { networkBuffers: { available: number; total: number } })
        .networkBuffers;
      expect(buffers.total).toBeGreaterThan(0);
      expect(buffers.available).toBe(buffers.total);
    }
    for (const taskManager of taskManagers) {
      expect(await taskManager.terminated).toEqual({
        reason: "shutdown",
        failed: false,
        message: "the job finished",
      });
    }
  });

  it("answers the job manager's metric query with its registry: the worker's and each running task's metrics, NaN as null", async () => {
    const jobManager = await startJobManager();
    const taskManager = await startTaskManager(jobManager, {}, { invokables });
    const graph = new JobGraph("wait");
    graph.addVertex({ name: "Wait", parallelism: 1, invokable: "waitForCancel" });
    const execution = await jobManager.deploy(graph);
    await until(
      () => execution.executionVertices.every((vertex) => vertex.state === "RUNNING"),
      "the task to run",
    );
    const registered = jobManager.taskManagers[0] as RegisteredTaskManager;
    const metrics = await registered.queryMetrics();
    const byName = (name: string) => metrics.find((metric) => metric.name === name);
    expect(byName("TotalMemorySegments")).toMatchObject({
      logicalScope: "taskmanager.Status.Shuffle.Netty",
      type: "gauge",
      variables: { "<tm_id>": taskManager.executor.resourceId.toString() },
    });
    expect(byName("TotalMemorySegments")?.value).toBeGreaterThan(0);
    expect(byName("numRecordsOutPerSecond")).toMatchObject({
      logicalScope: "taskmanager.job.task",
      type: "meter",
      value: 0,
      count: 0,
      variables: { "<job_name>": "wait", "<task_name>": "Wait", "<subtask_index>": "0" },
    });
    // The same values the task manager's own registry dumps, only NaN travels as null.
    const local = taskManager.executor.metricGroup.registry.dump();
    expect(metrics.map((metric) => metric.name).sort()).toEqual(
      local.map((metric) => metric.name).sort(),
    );
    const nan = local.filter((metric) => Number.isNaN(metric.value)).map((metric) => metric.name);
    for (const name of nan) expect(byName(name)?.value).toBeNull();
    execution.cancel("done");
    await execution.terminated;
  });

  it("fails the job, naming the task manager and its address, when a task manager leaves mid-job", async () => {
    const lost: RegisteredTaskManager[] = [];
    const jobManager = await startJobManager(
      {},
      { onTaskManagerLost: (taskManager) => lost.push(taskManager) },
    );
    const taskManagers = await Promise.all(
      [0, 1].map(() => startTaskManager(jobManager, {}, { invokables })),
    );
    const graph = new JobGraph("wait");
    graph.addVertex({ name: "Wait", parallelism: 2, invokable: "waitForCancel" });
    const execution = await jobManager.deploy(graph);
    await until(
      () => execution.executionVertices.every((vertex) => vertex.state === "RUNNING"),
      "both tasks to run",
    );
    const leaving = taskManagers.find((tm) => tm.index === 1) as TaskManager;
    expect(await leaving.close("leaving")).toEqual({
      reason: "closed",
      failed: false,
      message: "leaving",
    });
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.error?.message).toMatch(
      new RegExp(`^task manager 1 \\(pid ${process.pid}\\) at 127\\.0\\.0\\.1 was lost`),
    );
    expect(lost.map((tm) => tm.index)).toEqual([1]);
    // The other task manager's task was canceled, and it stays registered.
    expect(execution.executionVertices.map((vertex) => vertex.state).sort()).toEqual([
      "CANCELED",
      "FAILED",
    ]);
    expect(jobManager.taskManagers.map((tm) => tm.connected)).toEqual(
      [0, 1].map((index) => index !== 1),
    );
  });

  it("is refused by a job manager of another application version, naming both", async () => {
    const warnings: string[] = [];
    const jobManager = await startJobManager(
      {},
      { applicationVersion: "1.0.0", onWarning: (message) => warnings.push(message) },
    );
    await expect(
      startTaskManager(jobManager, {}, { applicationVersion: "2.0.0" }),
    ).rejects.toMatchObject({
      code: "SLUICE_ERR_PROTOCOL",
      message: expect.stringMatching(/application 2\.0\.0.*application 1\.0\.0/),
    });
    expect(jobManager.taskManagers).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining("refused a task manager connecting from")]);
  });

  it("is refused by a job manager that runs another shuffle plugin, naming both", async () => {
    const warnings: string[] = [];
    const jobManager = await startJobManager(
      {},
      { onWarning: (message) => warnings.push(message) },
    );
    await expect(
      TaskManager.start(new Configuration({ "shuffle-service-factory.class": "ws" }), {
        jobManager,
        loader: LOADER,
        connectRetryMs: 0,
      }),
    ).rejects.toMatchObject({
      code: "SLUICE_ERR_CONFIG",
      message: expect.stringMatching(
        /loaded the shuffle plugin @sluice\/shuffle-ws#WsShuffleServiceFactory .*but the job manager runs @sluice\/shuffle-tcp#TcpShuffleServiceFactory/,
      ),
    });
    expect(jobManager.taskManagers).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining("loaded the shuffle plugin")]);
  });

  it("fails to start with a clear message when no job manager address is configured", async () => {
    await expect(TaskManager.start(new Configuration({}))).rejects.toMatchObject({
      code: "SLUICE_ERR_CONFIG",
      message: expect.stringContaining("jobmanager.rpc.address"),
    });
  });

  it("carries the application's messages both ways, as requests and notifications, with errors and their codes", async () => {
    const notified: unknown[] = [];
    const warnings: string[] = [];
    const jobManager = await startJobManager(
      {},
      {
        onApplicationMessage: (taskManager, name, payload) => {
          if (name === "echo") return { from: taskManager.index, payload };
          if (name === "boom") throw new ConfigurationError("no such setting");
          notified.push([name, payload]);
          return undefined;
        },
        onWarning: (message) => warnings.push(message),
      },
    );
    const taskManager = await startTaskManager(
      jobManager,
      {},
      { onApplicationMessage: (name, payload) => ({ got: name, payload }) },
    );
    expect(await taskManager.callJobManager("echo", 5)).toEqual({ from: 0, payload: 5 });
    taskManager.notifyJobManager("progress", { records: 1 });
    await until(() => notified.length === 1, "the notification to arrive");
    expect(notified).toEqual([["progress", { records: 1 }]]);
    await expect(taskManager.callJobManager("boom", null)).rejects.toMatchObject({
      code: "SLUICE_ERR_CONFIG",
      message: "no such setting",
    });
    taskManager.notifyJobManager("boom", null);
    await until(() => warnings.length === 1, "the failed notification to be reported");
    expect(warnings[0]).toMatch(
      /handling the notification application from task manager 0 .* failed: no such setting/,
    );
    const registered = jobManager.taskManagers[0] as RegisteredTaskManager;
    expect(await registered.call("ping", [1])).toEqual({ got: "ping", payload: [1] });
  });
});
