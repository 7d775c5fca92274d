/**
 * A task manager that loses its job manager keeps its process and registers again (Flink's
 * TaskExecutor with `taskmanager.registration.timeout`): with backoff, cancelling its tasks and
 * releasing their partitions meanwhile, as a new registration under its resource id that jobs
 * may use as a replacement; it ends only when the timeout passed.
 */
import type { AddressInfo } from "node:net";
import { type Deferred, deferred, IllegalStateError } from "@sluice/core";
import { must } from "@sluice/core/testing";
import { JobGraph, type Task, type TaskInvokable } from "@sluice/runtime";
import { ResultPartitionType } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { CONTROL_PLANE_PATH } from "./control-plane-messages.js";
import type { RegisteredTaskManager } from "./registered-task-manager.js";
import { LinkProxy } from "./test-support/link-proxy.js";
import { numbersJob } from "./test-support/number-tasks.js";
import { until } from "./test-support/raw-control-client.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

const NUMBERS = 2_000;
/** The numbers sources hold their last record back until a test lets them finish. */
let finish: Deferred<void> = deferred<void>();
const proxies: LinkProxy[] = [];

afterEach(async () => {
  finish.resolve();
  finish = deferred<void>();
  for (const proxy of proxies.splice(0)) await proxy.close();
  await closeTestCluster();
});

/** Numbers 0..NUMBERS-1 from each source, the last one once the test lets them finish. */
async function numbers(task: Task): Promise<number> {
  const writer = task.writer<number>();
  for (let i = 0; i < NUMBERS; i++) {
    if (i === NUMBERS - 1) {
      await task.yieldToMailbox(
        Promise.race([
          finish.promise,
          new Promise((resolve) => task.signal.addEventListener("abort", resolve)),
        ]),
      );
      if (task.signal.aborted) throw task.signal.reason;
    }
    if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
    writer.emit(i);
  }
  return NUMBERS;
}

async function sum(task: Task): Promise<{ count: number; sum: number }> {
  let count = 0;
  let total = 0;
  for await (const value of task.reader<number>()) {
    count++;
    total += value;
  }
  return { count, sum: total };
}

const invokables: Readonly<Record<string, TaskInvokable<Task>>> = { numbers, sum };

describe("a task manager that lost its job manager", () => {
  it("registers again, as a new task manager under its resource id, when the job manager drops its connection, and runs the next job", async () => {
    const warnings: string[] = [];
    const jobManager = await startJobManager();
    const taskManager = await startTaskManager(
      jobManager,
      {},
      { invokables, onWarning: (message) => warnings.push(message) },
    );
    (jobManager.taskManagers[0] as RegisteredTaskManager).disconnect("going away");
    // The job manager registers it before the task manager has the reply.
    await until(() => taskManager.reRegistrations === 1, "the task manager to register again");
    expect(jobManager.taskManagers.map((tm) => tm.connected)).toEqual([false, true]);
    const again = must(jobManager.taskManagers[1]);
    expect(again.location.resourceId.toString()).toBe(taskManager.executor.resourceId.toString());
    expect(again.pid).toBe(process.pid);
    expect(taskManager.index).toBe(1);
    expect(warnings[0]).toMatch(
      /^lost the job manager at 127\.0\.0\.1:\d+ \(the control connection to the job manager at 127\.0\.0\.1:\d+ closed \(code 1000, going away\)\): canceling its tasks, releasing their partitions and registering again for up to 300000 ms \(taskmanager\.registration\.timeout\)$/,
    );
    finish.resolve();
    const execution = await jobManager.deploy(numbersJob("after registering again"));
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(execution.executionVertices.every((v) => v.gateway === again)).toBe(true);
  });

  it("ends after taskmanager.registration.timeout when its job manager is gone, naming both timeouts and the attempts", async () => {
    // A job manager that registers task managers, then falls silent and stops listening: its
    // task manager loses it by heartbeat.timeout, and every attempt to register again is refused.
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0, path: CONTROL_PLANE_PATH });
    await new Promise((resolve) => server.once("listening", resolve));
    server.on("connection", (socket) => {
      socket.on("message", (data) => {
        const { id, method } = JSON.parse(data.toString()) as { id: number; method: string };
        const result =
          method === "hello"
            ? {
                configuration: {
                  "shuffle-service-factory.class": "tcp",
                  "taskmanager.memory.network.min": "4mb",
                  "heartbeat.timeout": "300ms",
                  "taskmanager.registration.timeout": "1500ms",
                  "taskmanager.registration.initial-backoff": "100ms",
                },
              }
            : { index: 0 };
        socket.send(JSON.stringify({ jsonrpc: "2.0", id, result }));
        if (method === "registerTaskExecutor") server.close();
      });
    });
    const { port } = server.address() as AddressInfo;
    try {
      const taskManager = await startTaskManager(
        { host: "127.0.0.1", port },
        {},
        {
          onWarning: () => {},
        },
      );
      const termination = await taskManager.terminated;
      expect(termination.reason).toBe("job-manager-lost");
      expect(termination.failed).toBe(true);
      expect(termination.message).toMatch(
        new RegExp(
          `^no heartbeat request from the job manager for \\d+ ms \\(heartbeat\\.timeout 300 ms\\); it could not register again within 1500 ms \\(taskmanager\\.registration\\.timeout, \\d+ attempts\\): cannot reach the job manager at ws://127\\.0\\.0\\.1:${port}: connect ECONNREFUSED`,
        ),
      );
      // Backoff from 100 ms, doubling: a handful of attempts within 1.5 s, not hundreds.
      const attempts = Number(/, (\d+) attempts\)/.exec(termination.message)?.[1]);
      expect(attempts).toBeGreaterThanOrEqual(3);
      expect(attempts).toBeLessThanOrEqual(6);
      await expect(taskManager.executor.deployTask({})).rejects.toThrow(IllegalStateError);
    } finally {
      for (const client of server.clients) client.terminate();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("survives a network partition longer than heartbeat.timeout: the job fails over onto it once it registered again, exactly", async () => {
    const jobManager = await startJobManager({
      "restart-strategy.type": "fixed-delay",
      "restart-strategy.fixed-delay.attempts": 3,
      "restart-strategy.fixed-delay.delay": "10ms",
      "slot.request.timeout": "30s",
    });
    const warnings: string[] = [];
    const direct = await startTaskManager(jobManager, {}, { invokables });
    const proxy = await LinkProxy.start(jobManager);
    proxies.push(proxy);
    const partitioned = await startTaskManager(
      { host: "127.0.0.1", port: proxy.port },
      {},
      { invokables, onWarning: (message) => warnings.push(message) },
    );
    const execution = await jobManager.deploy(numbersJob("across a partition"));
    await until(
      () => execution.executionVertices.every((v) => v.state === "RUNNING"),
      "the job to run",
    );
    const cutOff = must(jobManager.taskManagers[1]);
    const cutAt = Date.now();
    proxy.cut();
    // heartbeat.timeout is 1 s in the test configuration: both sides give the other up.
    await until(() => !cutOff.connected, "the job manager to lose the cut-off task manager");
    await until(() => warnings.some((w) => w.startsWith("lost the job manager")), "the loss");
    proxy.heal();
    const healedAt = Date.now();
    await until(() => partitioned.reRegistrations === 1, "the task manager to register again");
    const registeredAfterMs = Date.now() - healedAt;
    finish.resolve();
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBeGreaterThanOrEqual(1);
    const again = must(jobManager.taskManagers[2]);
    expect(again.location.resourceId.toString()).toBe(partitioned.executor.resourceId.toString());
    // The restarted job runs on the surviving task manager and on the one that came back.
    const gateways = new Set(execution.executionVertices.map((v) => v.gateway));
    expect(gateways).toEqual(new Set([jobManager.taskManagers[0], again]));
    const sums = result.results.get("Sum") as { count: number; sum: number }[];
    expect(sums.reduce((n, s) => n + s.count, 0)).toBe(2 * NUMBERS);
    expect(sums.reduce((n, s) => n + s.sum, 0)).toBe(NUMBERS * (NUMBERS - 1));
    expect(direct.reRegistrations).toBe(0);
    console.log(
      `partition of ${healedAt - cutAt} ms: registered again ${registeredAfterMs} ms after it healed`,
    );
  }, 60_000);

  it("gets the partitions it wrote after registering again released at the job's end, though a lost registration had its resource id", async () => {
    const jobManager = await startJobManager({
      "restart-strategy.type": "fixed-delay",
      "restart-strategy.fixed-delay.attempts": 3,
      "restart-strategy.fixed-delay.delay": "10ms",
      "taskmanager.memory.network.min": "16mb",
    });
    await startTaskManager(jobManager, {}, { invokables });
    const proxy = await LinkProxy.start(jobManager);
    proxies.push(proxy);
    const partitioned = await startTaskManager(
      { host: "127.0.0.1", port: proxy.port },
      {},
      { invokables, onWarning: () => {} },
    );
    // The sums read blocking partitions: they run once both sources finished.
    const graph = new JobGraph("blocking numbers");
    const source = graph.addVertex({ name: "Numbers", parallelism: 2, invokable: "numbers" });
    const total = graph.addVertex({ name: "Sum", parallelism: 2, invokable: "sum" });
    graph.connect(source, total, {
      partitioner: { name: "HASH", keySelector: "value" },
      serializer: "int32",
      partitionType: ResultPartitionType.BLOCKING,
    });
    const execution = await jobManager.deploy(graph);
    await until(
      () => execution.executionVertices.filter((v) => v.state === "RUNNING").length === 2,
      "the sources to run",
    );
    const cutOff = must(jobManager.taskManagers[1]);
    proxy.cut();
    await until(() => !cutOff.connected, "the job manager to lose the cut-off task manager");
    proxy.heal();
    await until(() => partitioned.reRegistrations === 1, "the task manager to register again");
    finish.resolve();
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    const again = must(jobManager.taskManagers[2]);
    expect(execution.executionVertices.some((v) => v.gateway === again)).toBe(true);
    // Released on the task manager that came back, as on any other.
    const environment = partitioned.executor.shuffleEnvironment;
    await until(
      () => environment.getPartitionsOccupyingLocalResources().length === 0,
      "the job's partitions on the task manager that came back to be released",
    );
  }, 60_000);
});
