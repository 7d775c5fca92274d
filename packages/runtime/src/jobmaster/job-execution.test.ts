import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ErrorCodes,
  type ExecutionAttemptID,
  PartitionNotFoundError,
  RemoteTransportError,
  ResultPartitionID,
} from "@sluice/core";
import {
  type JobShuffleContext,
  type PartitionInfo,
  ResultPartitionType,
  type ShuffleDescriptor,
} from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PollStatus } from "../io/record-reader.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import {
  type TaskDeploymentDescriptor,
  taskNameWithSubtask,
} from "../messages/task-deployment-descriptor.js";
import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import type { Task } from "../taskexecutor/task.js";
import type { TaskExecutor } from "../taskexecutor/task-executor.js";
import { LocalCluster, localConfiguration } from "../taskexecutor/test-support/local-cluster.js";
import type { JobDeployer } from "./job-deployer.js";
import { JobExecution } from "./job-execution.js";
import { JobGraph, partitionIdOf } from "./job-graph.js";
import type { JobResult } from "./job-result.js";
import { createRestartBackoffTimeStrategy } from "./restart-backoff-time-strategy.js";
import { addSource } from "./test-support/source-vertex.js";

const BLOCKING = ResultPartitionType.BLOCKING;
const REBALANCE = { partitioner: { name: "REBALANCE" as const }, serializer: "int32" };

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A promise the test resolves. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Released by the test: `awaitGo` sources wait for it before they write. */
let go = deferred();

/** Emits `records × (subtask + 1)` numbers `subtask × 10^6 + i` through writer 0. */
async function emitNumbers(task: Task): Promise<number> {
  const writer = task.writer<number>();
  const count = (task.configuration.records as number) * (task.subtaskIndex + 1);
  for (let i = 0; i < count; i++) {
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    writer.emit(task.subtaskIndex * 1_000_000 + i);
    if (i % 1024 === 1023) await yieldToLoop();
  }
  return count;
}

/** Reads every gate to its end, one after the other: records and their sum per gate. */
async function readAll(task: Task): Promise<{ records: number; sum: number }[]> {
  const perGate: { records: number; sum: number }[] = [];
  for (let g = 0; g < task.gates.length; g++) {
    const reader = task.reader<number>(g);
    const read = { records: 0, sum: 0 };
    for (;;) {
      const status = reader.pollRecords((value) => {
        read.records++;
        read.sum += value;
      }, 1024);
      if (status === PollStatus.END_OF_INPUT) break;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      else await yieldToLoop();
    }
    perGate.push(read);
  }
  return perGate;
}

/** Emits `records × (subtask + 1)` numbers through every writer (each data set gets them all). */
async function emitToAll(task: Task): Promise<number> {
  const count = (task.configuration.records as number) * (task.subtaskIndex + 1);
  for (let w = 0; w < task.partitions.length; w++) {
    const writer = task.writer<number>(w);
    for (let i = 0; i < count; i++) {
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.emit(task.subtaskIndex * 1_000_000 + i);
      if (i % 1024 === 1023) await yieldToLoop();
    }
  }
  return count;
}

/** Reads gate 0 and writes every record on through writer 0. */
async function relay(task: Task): Promise<number> {
  const writer = task.writer<number>();
  let records = 0;
  for await (const value of task.reader<number>()) {
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    writer.emit(value);
    records++;
  }
  return records;
}

const INVOKABLES = {
  source: emitNumbers,
  emitToAll,
  relay,
  awaitGoRead: async (task: Task) => {
    await go.promise;
    return readAll(task);
  },
  /** Fails its first attempt when it is subtask `failSubtask`; reads everything otherwise. */
  failOnce: async (task: Task) => {
    if (task.attemptNumber === 0 && task.subtaskIndex === task.configuration.failSubtask) {
      throw new Error(`${task.name} fails once`);
    }
    return readAll(task);
  },
  awaitGo: async (task: Task) => {
    await go.promise;
    return emitNumbers(task);
  },
  read: readAll,
  rejectFirst: async (task: Task) => {
    for await (const value of task.reader<number>()) {
      throw new Error(`${task.name} rejects the record ${value}`);
    }
  },
};

/** What `emitNumbers` of `parallelism` subtasks writes in all. */
function written(records: number, parallelism: number): { records: number; sum: number } {
  let count = 0;
  let sum = 0;
  for (let s = 0; s < parallelism; s++) {
    const n = records * (s + 1);
    count += n;
    sum += s * 1_000_000 * n + (n * (n - 1)) / 2;
  }
  return { records: count, sum };
}

/** What the subtasks of a reading vertex got through gate `gate`, summed. */
function readThrough(results: readonly unknown[] | undefined, gate: number) {
  const total = { records: 0, sum: 0 };
  for (const perGate of (results ?? []) as { records: number; sum: number }[][]) {
    total.records += perGate[gate]?.records ?? 0;
    total.sum += perGate[gate]?.sum ?? 0;
  }
  return total;
}

/**
 * `executor` as the job side sees it, logging each deployment (`deploy Name (i/n)#a`) and each
 * task's end (`Name (i/n)#a FINISHED`) in order; deployments of the vertex named in `hold` wait
 * for its promise. Counts the partitions it is told to release.
 */
function observed(
  executor: TaskExecutor,
  log: string[],
  hold?: { readonly vertex: string; readonly until: Promise<void> },
): TaskExecutorGateway & { readonly released: ResultPartitionID[] } {
  const released: ResultPartitionID[] = [];
  return {
    location: executor.location,
    released,
    async submitTask(descriptor: TaskDeploymentDescriptor, jobMaster: JobMasterGateway) {
      const name = taskNameWithSubtask(descriptor);
      if (hold !== undefined && descriptor.taskName === hold.vertex) await hold.until;
      log.push(`deploy ${name}`);
      await executor.submitTask(descriptor, {
        updateTaskExecutionState(update) {
          if (["FINISHED", "FAILED", "CANCELED"].includes(update.state)) {
            log.push(`${name} ${update.state}`);
          }
          jobMaster.updateTaskExecutionState(update);
        },
        requestPartitionProducerState: (jobId, resultId, partitionId) =>
          jobMaster.requestPartitionProducerState(jobId, resultId, partitionId),
      });
    },
    cancelTask: (attempt: ExecutionAttemptID) => executor.cancelTask(attempt),
    updatePartitions: (attempt: ExecutionAttemptID, infos: readonly PartitionInfo[]) =>
      executor.updatePartitions(attempt, infos),
    async releasePartitions(jobId, ids) {
      released.push(...ids);
      await executor.releasePartitions(jobId, ids);
    },
  };
}

/** The position of `entry` in `log`, failing when it is not there. */
function at(log: readonly string[], entry: string): number {
  const index = log.indexOf(entry);
  expect(index, `"${entry}" in ${JSON.stringify(log)}`).toBeGreaterThanOrEqual(0);
  return index;
}

/** The regular files under `dir`, at any depth. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/**
 * A LocalCluster for one describe block: a deployer, and executors that write blocking
 * partitions into a fresh folder per test (small sort buffers and batch read memory).
 */
function blockingTestCluster(prefix: string) {
  const cluster = new LocalCluster();
  const env = {
    dir: "",
    deployer: undefined as unknown as JobDeployer,
    startExecutor(): Promise<TaskExecutor> {
      const config = localConfiguration({
        "taskmanager.network.sort-shuffle.min-buffers": 8,
        "taskmanager.memory.framework.off-heap.batch-shuffle.size": "512kb",
        "io.tmp.dirs": env.dir,
      });
      return cluster.startExecutor(config, { invokables: INVOKABLES });
    },
  };
  beforeEach(async () => {
    env.dir = mkdtempSync(join(tmpdir(), prefix));
    go = deferred();
    env.deployer = await cluster.startDeployer();
  });
  afterEach(async () => {
    go.resolve();
    await cluster.close();
    rmSync(env.dir, { recursive: true, force: true });
  });
  return env;
}

describe("JobExecution with blocking data sets", () => {
  const env = blockingTestCluster("sluice-job-execution-");
  const startExecutor = env.startExecutor;

  it("deploys every reader of a blocking data set after all its producer subtasks finished; they write it once, and each reader gets every record", async () => {
    const executor = await startExecutor();
    const log: string[] = [];
    const descriptors: TaskDeploymentDescriptor[] = [];
    const gateway = observed(executor, log);
    const graph = new JobGraph("two readers");
    const source = addSource(graph, { parallelism: 2, configuration: { records: 3_000 } });
    const count = graph.addVertex({ name: "Count", parallelism: 2, invokable: "read" });
    const audit = graph.addVertex({ name: "Audit", parallelism: 2, invokable: "read" });
    const numbers = graph.createDataSet(source, { ...REBALANCE, partitionType: BLOCKING });
    graph.connectDataSet(numbers, count);
    // Audit reads the data set twice: two gates on the same partitions.
    graph.connectDataSet(numbers, audit);
    graph.connectDataSet(numbers, audit);
    const execution = await env.deployer.deploy(graph, () => ({
      ...gateway,
      submitTask: (descriptor, jobMaster) => {
        descriptors.push(descriptor);
        return gateway.submitTask(descriptor, jobMaster);
      },
    }));
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    const expected = written(3_000, 2);
    expect(readThrough(result.results.get("Count"), 0)).toEqual(expected);
    expect(readThrough(result.results.get("Audit"), 0)).toEqual(expected);
    expect(readThrough(result.results.get("Audit"), 1)).toEqual(expected);

    const lastProducerEnd = Math.max(
      at(log, "Source (1/2)#0 FINISHED"),
      at(log, "Source (2/2)#0 FINISHED"),
    );
    for (const reader of ["Count (1/2)#0", "Count (2/2)#0", "Audit (1/2)#0", "Audit (2/2)#0"]) {
      expect(at(log, `deploy ${reader}`)).toBeGreaterThan(lastProducerEnd);
    }
    // One partition per producer subtask, and every reader's gates name those partitions.
    const produced = descriptors
      .filter((d) => d.taskName === "Source")
      .flatMap((d) => d.producedPartitions.map((p) => p.deployment.shuffleDescriptor));
    expect(produced).toHaveLength(2);
    const producedIds = produced.map((d) => d.resultPartitionId.toString()).sort();
    for (const reader of descriptors.filter((d) => d.taskName !== "Source")) {
      for (const gate of reader.inputGates) {
        const ids = gate.deployment.shuffleDescriptors.map((d) => d.resultPartitionId.toString());
        expect(ids.sort()).toEqual(producedIds);
      }
    }
  });

  it("deploys a pipelined producer together with its consumer, which waits for a blocking input, not before", async () => {
    const executor = await startExecutor();
    const log: string[] = [];
    const graph = new JobGraph("mixed");
    const batch = addSource(graph, {
      name: "Batch",
      parallelism: 1,
      configuration: { records: 2_000 },
    });
    const stream = addSource(graph, {
      name: "Stream",
      parallelism: 1,
      configuration: { records: 2_000 },
    });
    const join_ = graph.addVertex({ name: "Join", parallelism: 1, invokable: "read" });
    graph.connect(batch, join_, { ...REBALANCE, partitionType: BLOCKING });
    graph.connect(stream, join_, REBALANCE);
    const gateway = observed(executor, log);
    const result = await (await env.deployer.deploy(graph, () => gateway)).terminated;
    expect(result.status).toBe("FINISHED");
    expect(at(log, "deploy Stream (1/1)#0")).toBeGreaterThan(at(log, "Batch (1/1)#0 FINISHED"));
    expect(at(log, "deploy Join (1/1)#0")).toBeGreaterThan(at(log, "Batch (1/1)#0 FINISHED"));
    const [read] = result.results.get("Join") as { records: number }[][];
    expect(read?.map((gate) => gate.records)).toEqual([2_000, 2_000]);
  });

  it("deploys a consumer with its producer when a pipelined edge puts them in one region, and it reads the producer's blocking data set once complete", async () => {
    const executor = await startExecutor();
    const log: string[] = [];
    const graph = new JobGraph("one region");
    const source = addSource(graph, {
      parallelism: 1,
      invokable: "awaitGo",
      configuration: { records: 5_000 },
    });
    const sink = graph.addVertex({ name: "Sink", parallelism: 1, invokable: "read" });
    graph.connect(source, sink, { ...REBALANCE, partitionType: BLOCKING });
    // Nothing is written here; the edge only makes Source and Sink one pipelined region.
    graph.connect(source, sink, REBALANCE);
    const execution = await env.deployer.deploy(graph, () => observed(executor, log));
    // Sink is deployed (and asks for the blocking partition) while Source has not written yet.
    expect(log).toEqual(["deploy Source (1/1)#0", "deploy Sink (1/1)#0"]);
    go.resolve();
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    const [read] = result.results.get("Sink") as { records: number }[][];
    expect(read?.map((gate) => gate.records)).toEqual([5_000, 0]);
  });

  it("keeps the blocking partitions until the job ends, then releases them and their files are deleted", async () => {
    const executor = await startExecutor();
    const log: string[] = [];
    const readersMayStart = deferred();
    const gateway = observed(executor, log, { vertex: "Count", until: readersMayStart.promise });
    const graph = new JobGraph("release");
    const source = addSource(graph, { parallelism: 2, configuration: { records: 2_000 } });
    const count = graph.addVertex({ name: "Count", parallelism: 1, invokable: "read" });
    graph.connect(source, count, { ...REBALANCE, partitionType: BLOCKING });
    const execution = await env.deployer.deploy(graph, () => gateway);
    await expect.poll(() => log.filter((entry) => entry.endsWith("FINISHED"))).toHaveLength(2);
    // The producers ended; their partitions live on, in files.
    expect(executor.runningTasks).toEqual([]);
    expect(executor.shuffleEnvironment.getPartitionsOccupyingLocalResources()).toHaveLength(2);
    expect(filesUnder(env.dir).filter((file) => file.endsWith(".shuffle.data"))).toHaveLength(2);
    readersMayStart.resolve();
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.releaseErrors).toEqual([]);
    expect(gateway.released).toHaveLength(2);
    expect(executor.shuffleEnvironment.getPartitionsOccupyingLocalResources()).toEqual([]);
    await expect.poll(() => filesUnder(env.dir)).toEqual([]);
  });

  it("counts no failed release on a TaskExecutor whose connection closed before its loss was reported", async () => {
    const executor = await startExecutor();
    const gateway = observed(executor, []);
    let refused = 0;
    const closing: TaskExecutorGateway = {
      ...gateway,
      async releasePartitions() {
        refused++;
        throw new RemoteTransportError(
          "cannot call releasePartitions: the control connection to task manager 1 is closed",
        );
      },
    };
    const graph = new JobGraph("release on a closed connection");
    const source = addSource(graph, { parallelism: 2, configuration: { records: 500 } });
    const count = graph.addVertex({ name: "Count", parallelism: 1, invokable: "read" });
    graph.connect(source, count, { ...REBALANCE, partitionType: BLOCKING });
    const result = await (await env.deployer.deploy(graph, () => closing)).terminated;
    expect(result.status).toBe("FINISHED");
    expect(refused).toBeGreaterThan(0);
    expect(result.releaseErrors).toEqual([]);
  });

  it("goes on when a TaskExecutor is lost whose tasks of the job all ended and whose partitions nobody needs, and releases nothing there afterwards", async () => {
    const kept = await startExecutor();
    const lost = await startExecutor();
    const log: string[] = [];
    const keptGateway = observed(kept, log);
    const lostGateway = observed(lost, log);
    const graph = new JobGraph("lost worker");
    const vertex = (name: string, invokable: string) =>
      graph.addVertex({ name, parallelism: 1, invokable, configuration: { records: 500 } });
    // A waits for the test, so the job still runs when D and E, on the lost worker, ended.
    const a = vertex("A", "awaitGo");
    const d = vertex("D", "source");
    const e = vertex("E", "read");
    graph.connect(a, vertex("B", "read"), { ...REBALANCE, partitionType: BLOCKING });
    graph.connect(d, e, { ...REBALANCE, partitionType: BLOCKING });
    const execution = await env.deployer.deploy(graph, (v) =>
      v === d || v === e ? lostGateway : keptGateway,
    );
    await expect.poll(() => log).toContain("E (1/1)#0 FINISHED");
    await expect.poll(() => lostGateway.released).toHaveLength(1);
    execution.notifyTaskExecutorLost(lostGateway, new Error("its process died"));
    expect(execution.status).toBe("RUNNING");
    go.resolve();
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.releaseErrors).toEqual([]);
    expect(keptGateway.released).toHaveLength(1);
    // D's partition was released when E, its only reader, finished: before the worker was lost.
    expect(lostGateway.released).toHaveLength(1);
    expect(result.restarts).toBe(0);
  });

  it("fails the job when a lost TaskExecutor had a task of it that had not ended", async () => {
    const executor = await startExecutor();
    const gateway = observed(executor, []);
    const graph = new JobGraph("lost task");
    const source = addSource(graph, {
      parallelism: 1,
      invokable: "awaitGo",
      configuration: { records: 10 },
    });
    const sink = graph.addVertex({ name: "Sink", parallelism: 1, invokable: "read" });
    graph.connect(source, sink, REBALANCE);
    const execution = await env.deployer.deploy(graph, () => gateway);
    execution.notifyTaskExecutorLost(gateway, new Error("its process died"));
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.error?.message).toBe("its process died");
    expect(result.failedTask).toBe("Source (1/1)#0");
  });

  it("refuses a job with a data set that nobody reads, naming it", async () => {
    const executor = await startExecutor();
    const graph = new JobGraph("orphan");
    const source = graph.addVertex({ name: "Source", parallelism: 1, invokable: "source" });
    graph.createDataSet(source, REBALANCE);
    await expect(env.deployer.deploy(graph, () => executor)).rejects.toMatchObject({
      code: ErrorCodes.INVALID_ARGUMENT,
      message: expect.stringMatching(/of "Source" in job orphan has no consumer/),
    });
  });

  it("sizes the network memory of a task that reads one data set through two gates with both gates' buffers", () => {
    const memoryOf = (gates: number) => {
      const graph = new JobGraph("sizing");
      const source = graph.addVertex({ name: "Source", parallelism: 4 });
      const join_ = graph.addVertex({ name: "Join", parallelism: 2 });
      const numbers = graph.createDataSet(source, { ...REBALANCE, partitionType: BLOCKING });
      for (let i = 0; i < gates; i++) graph.connectDataSet(numbers, join_);
      return env.deployer.master.computeShuffleMemorySizeForTask(graph.inputsOutputsOf(join_));
    };
    expect(memoryOf(1)).toBeGreaterThan(0);
    expect(memoryOf(2)).toBe(2 * memoryOf(1));
  });
});

describe("JobExecution failing over by pipelined region", () => {
  /** Generous, for a loaded machine: polls wait for tasks to run. */
  const POLL = { timeout: 20_000 };
  /** A restart strategy that allows a few immediate restarts. */
  const configuration = localConfiguration({
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 3,
    "restart-strategy.fixed-delay.delay": "0ms",
  });

  const env = blockingTestCluster("sluice-region-failover-");
  const startExecutor = env.startExecutor;

  /** Every task of {@link twoStages}, in the order a full re-run reports them. */
  const EVERY_TASK_OF_TWO_STAGES = ["Source (1/2)", "Source (2/2)", "Count (1/2)", "Count (2/2)"];

  /** The job finished without an error after one restart that re-ran exactly `rerunTasks`. */
  function expectFinishedAfterOneRestart(result: JobResult, rerunTasks: readonly string[]) {
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect(result.rerunTasks).toEqual(rerunTasks);
  }

  /** Source (2) → BLOCKING, ALL_TO_ALL → Count (2), Count running `countInvokable`. */
  function twoStages(countInvokable: string, configuration = {}) {
    const graph = new JobGraph("two stages");
    const source = addSource(graph, { parallelism: 2, configuration: { records: 2_000 } });
    const count = graph.addVertex({
      name: "Count",
      parallelism: 2,
      invokable: countInvokable,
      configuration,
    });
    graph.connect(source, count, { ...REBALANCE, partitionType: BLOCKING });
    return { graph, source, count };
  }

  it("re-runs only the failed reader when its inputs are still available (testRegionFailoverForRegionInternalErrors)", async () => {
    const executor = await startExecutor();
    const log: string[] = [];
    const { graph } = twoStages("failOnce", { failSubtask: 0 });
    const execution = await env.deployer.deploy(graph, () => observed(executor, log), {
      configuration,
    });
    const result = await execution.terminated;
    expectFinishedAfterOneRestart(result, ["Count (1/2)"]);
    expect(log.filter((entry) => entry.startsWith("deploy"))).toEqual([
      "deploy Source (1/2)#0",
      "deploy Source (2/2)#0",
      "deploy Count (1/2)#0",
      "deploy Count (2/2)#0",
      "deploy Count (1/2)#1",
    ]);
    expect(readThrough(result.results.get("Count"), 0)).toEqual(written(2_000, 2));
  });

  it("restarts every task with jobmanager.execution.failover-strategy full (RestartAllFailoverStrategy)", async () => {
    const executor = await startExecutor();
    const { graph } = twoStages("failOnce", { failSubtask: 0 });
    const execution = await env.deployer.deploy(graph, () => observed(executor, []), {
      configuration: localConfiguration({
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.delay": "0ms",
        "jobmanager.execution.failover-strategy": "full",
      }),
    });
    const result = await execution.terminated;
    expect(result.status, String(result.error)).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect(result.rerunTasks).toEqual(EVERY_TASK_OF_TWO_STAGES);
    expect(readThrough(result.results.get("Count"), 0)).toEqual(written(2_000, 2));
  });

  it("re-runs the producer of the partition a reader could not read, with every reader of it (testRegionFailoverForDataConsumptionErrors)", async () => {
    const executor = await startExecutor();
    const log: string[] = [];
    const direct = observed(executor, log);
    const { graph } = twoStages("read");
    let failed = false;
    const gateway: TaskExecutorGateway = {
      ...direct,
      submitTask: async (descriptor, jobMaster) => {
        if (descriptor.taskName === "Count" && descriptor.executionAttemptId.subtaskIndex === 1) {
          if (!failed) {
            failed = true;
            // As a reader reports a partition it cannot find: the error names the partition.
            const [first] = descriptor.inputGates[0]?.deployment.shuffleDescriptors ?? [];
            throw Object.assign(new PartitionNotFoundError("Source (1/2)'s partition is gone"), {
              partitionId: first?.resultPartitionId,
            });
          }
        }
        return direct.submitTask(descriptor, jobMaster);
      },
    };
    const execution = await env.deployer.deploy(graph, () => gateway, { configuration });
    const result = await execution.terminated;
    expectFinishedAfterOneRestart(result, ["Source (1/2)", "Count (1/2)", "Count (2/2)"]);
    expect(log).toContain("deploy Source (1/2)#1");
    expect(log).not.toContain("deploy Source (2/2)#1");
    expect(readThrough(result.results.get("Count"), 0)).toEqual(written(2_000, 2));
  });

  it("re-runs the finished sources whose partitions were lost with their TaskExecutor before the readers ran, on the replacement", async () => {
    // The local plugin reads partitions in process only, so every task runs on one worker here;
    // the cluster's tests lose one of several.
    const lost = await startExecutor();
    const replacement = await startExecutor();
    const log: string[] = [];
    const readersMayDeploy = deferred();
    const lostGateway = observed(lost, log, { vertex: "Count", until: readersMayDeploy.promise });
    const replacementGateway = observed(replacement, log);
    const { graph } = twoStages("read");
    const execution = await env.deployer.deploy(
      graph,
      (_vertex, _subtask, { isLost }) => (isLost(lostGateway) ? replacementGateway : lostGateway),
      { configuration },
    );
    await expect
      .poll(() => log.filter((entry) => entry.endsWith("#0 FINISHED")), POLL)
      .toHaveLength(2);
    await lost.close();
    execution.notifyTaskExecutorLost(lostGateway, new Error("its process died"));
    expect(execution.status).toBe("RUNNING");
    readersMayDeploy.resolve();
    const result = await execution.terminated;
    expectFinishedAfterOneRestart(result, EVERY_TASK_OF_TWO_STAGES);
    for (const task of ["Source (1/2)#1", "Source (2/2)#1", "Count (1/2)#1", "Count (2/2)#1"]) {
      expect(at(log, `${task} FINISHED`)).toBeGreaterThan(0);
    }
    expect(readThrough(result.results.get("Count"), 0)).toEqual(written(2_000, 2));
    expect(lostGateway.released).toEqual([]);
  });

  /** Source (1) and Slow (1, waits for the test) → BLOCKING → Count (1) reading both. */
  function twoInputs() {
    const graph = new JobGraph("two inputs");
    const source = addSource(graph, { parallelism: 1, configuration: { records: 2_000 } });
    const slow = addSource(graph, {
      name: "Slow",
      parallelism: 1,
      invokable: "awaitGo",
      configuration: { records: 1_000 },
    });
    const count = graph.addVertex({ name: "Count", parallelism: 1, invokable: "read" });
    const numbers = graph.connect(source, count, { ...REBALANCE, partitionType: BLOCKING });
    graph.connect(slow, count, { ...REBALANCE, partitionType: BLOCKING });
    return { graph, source, slow, numbers };
  }

  /** What Count of {@link twoInputs} must have read: everything of both, through two gates. */
  function expectBothRead(result: JobResult) {
    expect(readThrough(result.results.get("Count"), 0)).toEqual(written(2_000, 1));
    expect(readThrough(result.results.get("Count"), 1)).toEqual(written(1_000, 1));
  }

  it("re-runs at once a finished source lost with its TaskExecutor when a reader not scheduled yet needs its partition", async () => {
    const lost = await startExecutor();
    const replacement = await startExecutor();
    const log: string[] = [];
    const onReplacement: string[] = [];
    const lostGateway = observed(lost, log);
    const replacementGateway = observed(replacement, onReplacement);
    const { graph, slow } = twoInputs();
    // Slow runs on the worker that stays; Count is placed on the lost one at first.
    const execution = await env.deployer.deploy(
      graph,
      (vertex, _subtask, { isLost }) =>
        vertex === slow || isLost(lostGateway) ? replacementGateway : lostGateway,
      { configuration },
    );
    await expect.poll(() => log, POLL).toContain("Source (1/1)#0 FINISHED");
    // Count waits for Slow: without a re-run now, Source's partition would be missing for good.
    execution.notifyTaskExecutorLost(lostGateway, new Error("its process died"));
    await lost.close();
    await expect.poll(() => onReplacement, POLL).toContain("Source (1/1)#1 FINISHED");
    go.resolve();
    const result = await execution.terminated;
    expectFinishedAfterOneRestart(result, ["Source (1/1)"]);
    // Count, placed on the lost worker at the start, runs on the replacement, as its first attempt.
    expect(onReplacement.toSorted()).toEqual([
      "Count (1/1)#0 FINISHED",
      "Slow (1/1)#0 FINISHED",
      "Source (1/1)#1 FINISHED",
      "deploy Count (1/1)#0",
      "deploy Slow (1/1)#0",
      "deploy Source (1/1)#1",
    ]);
    expectBothRead(result);
  });

  it("re-runs the producer of partitions the ShuffleMaster reports lost (stopTrackingAndReleasePartitions), instead of failing the job", async () => {
    const executor = await startExecutor();
    const log: string[] = [];
    const gateway = observed(executor, log);
    const { graph, source, numbers } = twoInputs();
    const master = env.deployer.master;
    let context: JobShuffleContext | undefined;
    const released: string[] = [];
    // The deployer's master, telling the test the job's shuffle context and each release.
    const observedMaster = new Proxy(master, {
      get(target, key) {
        if (key === "registerJob") {
          return (job: JobShuffleContext) => {
            context = job;
            target.registerJob(job);
          };
        }
        if (key === "releasePartitionExternally") {
          return (descriptor: ShuffleDescriptor) => {
            released.push(descriptor.resultPartitionId.toString());
            target.releasePartitionExternally(descriptor);
          };
        }
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const execution = new JobExecution(graph, observedMaster, () => gateway, "producers-first", {
      restartStrategy: createRestartBackoffTimeStrategy(configuration),
    });
    await execution.start();
    await expect.poll(() => log, POLL).toContain("Source (1/1)#0 FINISHED");
    const [producer] = execution.executionVertices.filter((e) => e.vertex === source);
    const lost = new ResultPartitionID(
      partitionIdOf(numbers.dataSet, 0),
      producer?.attemptId as ExecutionAttemptID,
    );
    await context?.stopTrackingAndReleasePartitions([lost]);
    expect(released).toContain(lost.toString());
    expect(gateway.released.map(String)).toContain(lost.toString());
    await expect.poll(() => log, POLL).toContain("Source (1/1)#1 FINISHED");
    go.resolve();
    const result = await execution.terminated;
    expectFinishedAfterOneRestart(result, ["Source (1/1)"]);
    expectBothRead(result);
  });

  it("fails the job when the restart strategy allows no more restarts, naming the task", async () => {
    const executor = await startExecutor();
    const { graph } = twoStages("failOnce", { failSubtask: 1 });
    const execution = await env.deployer.deploy(graph, () => observed(executor, []), {
      configuration: localConfiguration({ "restart-strategy.type": "none" }),
    });
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.failedTask).toBe("Count (2/2)#0");
    expect(result.error?.message).toBe("Count (2/2)#0 fails once");
    expect(result.restarts).toBe(0);
    expect(result.rerunTasks).toEqual([]);
  });

  it("releases a stage's blocking partitions once every reader finished, while the third stage still runs, and keeps a persistent one until the job ends (RegionPartitionGroupReleaseStrategy)", async () => {
    const executor = await startExecutor();
    const log: string[] = [];
    const gateway = observed(executor, log);
    const graph = new JobGraph("three stages");
    const source = addSource(graph, {
      parallelism: 1,
      invokable: "emitToAll",
      configuration: { records: 2_000 },
    });
    const map = graph.addVertex({ name: "Map", parallelism: 1, invokable: "relay" });
    const audit = graph.addVertex({ name: "Audit", parallelism: 1, invokable: "read" });
    const sink = graph.addVertex({ name: "Sink", parallelism: 1, invokable: "awaitGoRead" });
    const numbers = graph.connect(source, map, { ...REBALANCE, partitionType: BLOCKING });
    const kept = graph.connect(source, audit, {
      ...REBALANCE,
      partitionType: ResultPartitionType.BLOCKING_PERSISTENT,
    });
    const relayed = graph.connect(map, sink, { ...REBALANCE, partitionType: BLOCKING });
    const held = () =>
      executor.shuffleEnvironment
        .getPartitionsOccupyingLocalResources()
        .map((id) => id.partitionId.intermediateDataSetID.toString())
        .sort();
    const execution = await env.deployer.deploy(graph, () => gateway);
    await expect.poll(() => log, POLL).toContain("Audit (1/1)#0 FINISHED");
    await expect.poll(() => log, POLL).toContain("Map (1/1)#0 FINISHED");
    // Sink (stage 3) still runs: Source's BLOCKING partition is gone, files and all.
    await expect
      .poll(held, POLL)
      .toEqual([kept.resultId.toString(), relayed.resultId.toString()].sort());
    expect(held()).not.toContain(numbers.resultId.toString());
    await expect
      .poll(() => filesUnder(env.dir).filter((file) => file.endsWith(".shuffle.data")), POLL)
      .toHaveLength(2);
    expect(execution.status).toBe("RUNNING");
    go.resolve();
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.releaseErrors).toEqual([]);
    expect(readThrough(result.results.get("Sink"), 0)).toEqual(written(2_000, 1));
    expect(readThrough(result.results.get("Audit"), 0)).toEqual(written(2_000, 1));
    // The persistent partition lived until the job ended.
    expect(held()).toEqual([]);
    await expect.poll(() => filesUnder(env.dir), POLL).toEqual([]);
  });
});

describe("the root cause of a failed job", () => {
  const cluster = new LocalCluster();
  afterEach(() => cluster.close());

  it("is a consumer's own error even when the cancellation it caused at its producer is reported first", async () => {
    const deployer = await cluster.startDeployer();
    const executor = await cluster.startExecutor(localConfiguration(), { invokables: INVOKABLES });
    const direct = observed(executor, []);
    /** The terminal reports in the order the job side receives them. */
    const received: string[] = [];
    const producerEnded = deferred();
    const TERMINAL_STATES = ["FINISHED", "FAILED", "CANCELED"];
    /** The consumer's delayed report: replies to the job side come after it, as on one connection. */
    let delayedReport: Promise<void> = Promise.resolve();
    // As across processes, the consumer's report reaches the job side only after the producer's.
    const gateway = (delayFailure: boolean): TaskExecutorGateway => ({
      ...direct,
      cancelTask: async (attempt) => {
        if (delayFailure) await delayedReport;
        return direct.cancelTask(attempt);
      },
      submitTask: (descriptor, jobMaster) =>
        direct.submitTask(descriptor, {
          requestPartitionProducerState: (...args) =>
            jobMaster.requestPartitionProducerState(...args),
          updateTaskExecutionState(update) {
            const deliver = () => {
              if (TERMINAL_STATES.includes(update.state)) {
                received.push(`${descriptor.taskName} ${update.state} ${update.error?.code}`);
              }
              jobMaster.updateTaskExecutionState(update);
            };
            if (delayFailure && update.state === "FAILED") {
              delayedReport = producerEnded.promise.then(deliver);
              return;
            }
            deliver();
            if (!delayFailure && TERMINAL_STATES.includes(update.state)) producerEnded.resolve();
          },
        }),
    });
    const graph = new JobGraph("late report");
    const source = addSource(graph, { parallelism: 1, configuration: { records: 1_000_000 } });
    const sink = graph.addVertex({ name: "Sink", parallelism: 1, invokable: "rejectFirst" });
    graph.connect(source, sink, REBALANCE);
    const execution = await deployer.deploy(graph, (v) => gateway(v === sink));
    const result = await execution.terminated;
    // The producer ended first, for a reason the consumer's failure caused.
    expect(received).toEqual([`Source FAILED ${ErrorCodes.CANCELLED}`, "Sink FAILED undefined"]);
    expect(result.status).toBe("FAILED");
    expect(result.failedTask).toBe("Sink (1/1)#0");
    expect(result.failedTaskLocation).toBe(executor.location);
    expect(result.error?.message).toBe("Sink (1/1)#0 rejects the record 0");
  });
});
