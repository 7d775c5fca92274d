import { ErrorCodes, ExecutionAttemptID, JobID } from "@sluice/core";
import { afterEach, describe, expect, it } from "vitest";
import type { JobDeployer } from "../jobmaster/job-deployer.js";
import type { JobExecution } from "../jobmaster/job-execution.js";
import { JobGraph } from "../jobmaster/job-graph.js";
import { addSource } from "../jobmaster/test-support/source-vertex.js";
import { TaskDeploymentDescriptorCodec } from "../messages/task-deployment-descriptor.js";
import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import { TaskNotFoundError } from "./errors.js";
import type { Task } from "./task.js";
import type { TaskExecutor, TaskExecutorOptions } from "./task-executor.js";
import { LocalCluster, localConfiguration, segments } from "./test-support/local-cluster.js";
import { countWords } from "./test-support/task-harness.js";
import {
  expectedCounts,
  wordCountGraph as sharedWordCountGraph,
  totals,
  wordOf,
} from "./test-support/word-count.js";
import type { TaskInvokable } from "./user-code-registry.js";

const cluster = new LocalCluster();
afterEach(() => cluster.close());

function configuration(extra: Record<string, unknown> = {}) {
  return localConfiguration(extra);
}

/** Emits `configuration.words` words `w<i mod 97>` through writer 0, yielding now and then. */
async function emitWords(task: Task): Promise<number> {
  const writer = task.writer<string>();
  const count = task.configuration.words as number;
  const failAfter = task.configuration.failAfter as number | undefined;
  for (let i = 0; i < count; i++) {
    if (failAfter !== undefined && i === failAfter) {
      throw new Error(`source ${task.subtaskIndex} broke on purpose`);
    }
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    writer.emit(wordOf(i, task.subtaskIndex));
    if (i % 512 === 511) await new Promise((resolve) => setImmediate(resolve));
  }
  return count;
}

const INVOKABLES: Readonly<Record<string, TaskInvokable<Task>>> = {
  source: emitWords,
  count: countWords,
};

function startExecutor(
  config = configuration(),
  options: Omit<TaskExecutorOptions, "invokables"> = {},
): Promise<TaskExecutor> {
  return cluster.startExecutor(config, { ...options, invokables: INVOKABLES });
}

function startDeployer(config = configuration()): Promise<JobDeployer> {
  return cluster.startDeployer(config);
}

/** A job `Source` (parallelism 2) → HASH by word → `Count` (parallelism 2). */
function wordCountGraph(words: number, sourceConfig: Record<string, number> = {}): JobGraph {
  return sharedWordCountGraph("word count", { words, ...sourceConfig });
}

/** Deploys `graph` with subtask i of every vertex on executor i mod n. */
function deployOn(
  deployer: JobDeployer,
  graph: JobGraph,
  on: readonly TaskExecutor[],
  order?: "producers-first" | "consumers-first",
): Promise<JobExecution> {
  return deployer.deploy(graph, (_vertex, i) => on[i % on.length] as TaskExecutor, {
    ...(order === undefined ? {} : { order }),
  });
}

describe("TaskExecutor with the job-side deployer", () => {
  it("runs a keyed job and every word is counted exactly once", async () => {
    const deployer = await startDeployer();
    const a = await startExecutor();
    const execution = await deployOn(deployer, wordCountGraph(20_000), [a]);
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(totals(result.results)).toEqual(expectedCounts(20_000, 2));
    expect(result.results.get("Source")).toEqual([20_000, 20_000]);
    expect(a.runningTasks).toEqual([]);
    expect(a.shuffleEnvironment.getPartitionsOccupyingLocalResources()).toEqual([]);
  });

  it("runs one consumer subtask that reads a range of subpartitions of each producer through one gate", async () => {
    const deployer = await startDeployer();
    const a = await startExecutor();
    const graph = new JobGraph("one counter");
    const source = addSource(graph, { parallelism: 2, configuration: { words: 5_000 } });
    const count = graph.addVertex({ name: "Count", parallelism: 1, invokable: "count" });
    graph.connect(source, count, {
      partitioner: { name: "HASH", keySelector: "value" },
      serializer: "string",
      numberOfSubpartitions: 4,
    });
    const execution = await deployOn(deployer, graph, [a]);
    const channels = a.runningTasks.map(
      (task) => a.getTask(task.executionAttemptId)?.gates[0]?.numberOfInputChannels,
    );
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(channels).toContain(8);
    expect(totals(result.results)).toEqual(expectedCounts(5_000, 2));
  });

  it("deploys consumers before their producers with unknown descriptors that updatePartitions replaces", async () => {
    const deployer = await startDeployer();
    const a = await startExecutor();
    const execution = await deployOn(deployer, wordCountGraph(5_000), [a], "consumers-first");
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(totals(result.results)).toEqual(expectedCounts(5_000, 2));
  });

  it("fails the job when a task fails, names the task, cancels the others and frees every buffer", async () => {
    const deployer = await startDeployer();
    const a = await startExecutor();
    const graph = wordCountGraph(1_000_000, { failAfter: 3_000 });
    const execution = await deployOn(deployer, graph, [a]);
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.failedTask).toMatch(/^Source \([12]\/2\)#0$/);
    expect(result.error?.message).toMatch(/source [01] broke on purpose/);
    expect(execution.executionVertices.map((e) => e.state).sort()).toEqual(
      expect.arrayContaining(["FAILED"]),
    );
    for (const e of execution.executionVertices) {
      expect(["FAILED", "CANCELED"]).toContain(e.state);
    }
    expect(a.runningTasks).toEqual([]);
  });

  it("starts no data server when every task runs in process", async () => {
    const a = await startExecutor(configuration(), { localCommunicationOnly: true });
    expect(a.location.dataPort).toBe(-1);
  });
});

/**
 * A gateway at `executor`'s location that records the descriptors (as JSON) instead of deploying
 * them, so that a test can deploy and drive the tasks itself. It runs no task, so it knows none.
 */
function recordingGateway(executor: TaskExecutor, descriptors: unknown[]): TaskExecutorGateway {
  return {
    location: executor.location,
    submitTask: async (descriptor) => {
      descriptors.push(TaskDeploymentDescriptorCodec.toJSON(descriptor));
    },
    cancelTask: async (attempt) => {
      throw new TaskNotFoundError(`the recording gateway runs no task ${attempt}`);
    },
    updatePartitions: async () => {},
    releasePartitions: async () => {},
  };
}

/** The JSON deployment descriptors of the word-count job: Source 0, Source 1, Count 0, Count 1. */
async function wordCountDescriptors(executor: TaskExecutor, words = 100): Promise<unknown[]> {
  const descriptors: unknown[] = [];
  const deployer = await startDeployer();
  await deployer.deploy(wordCountGraph(words), () => recordingGateway(executor, descriptors));
  return descriptors;
}

describe("a deployed Task", () => {
  it("refuses its readers and writers until it runs, with a hint to call run()", async () => {
    const executor = await startExecutor();
    const descriptors = await wordCountDescriptors(executor);
    const task = await executor.deployTask(descriptors[2]);
    expect(task.state).toBe("INITIALIZING");
    expect(() => task.reader()).toThrow(
      expect.objectContaining({
        code: ErrorCodes.ILLEGAL_STATE,
        message: expect.stringMatching(/RUNNING.*task\.run/),
      }),
    );
    expect(() => task.writer()).toThrow(
      expect.objectContaining({ code: ErrorCodes.ILLEGAL_STATE }),
    );
    task.cancel();
    await expect(task.terminated).resolves.toMatchObject({ state: "CANCELED" });
    expect(() => task.reader()).toThrow(/CANCELED/);
  });

  it("accepts the descriptor as JSON or decoded, and resolves partitionsConsumed once the consumer read everything", async () => {
    const executor = await startExecutor();
    const descriptors = await wordCountDescriptors(executor, 2_000);
    const decoded = TaskDeploymentDescriptorCodec.fromJSON(descriptors[0]);
    const tasks = [
      await executor.deployTask(decoded),
      await executor.deployTask(descriptors[1]),
      await executor.deployTask(descriptors[2]),
      await executor.deployTask(TaskDeploymentDescriptorCodec.fromJSON(descriptors[3])),
    ] as Task[];
    const [s0, s1, c0, c1] = tasks as [Task, Task, Task, Task];
    let consumed = false;
    void Promise.all([s0.partitionsConsumed, s1.partitionsConsumed]).then(() => {
      consumed = true;
    });
    const counts = await Promise.all([
      s0.run(emitWords),
      s1.run(emitWords),
      c0.run(countWords),
      c1.run(countWords),
    ]);
    expect(counts.slice(0, 2)).toEqual([2_000, 2_000]);
    await Promise.all([s0.partitionsConsumed, s1.partitionsConsumed]);
    expect(consumed).toBe(true);
    for (const task of tasks) expect(task.state).toBe("FINISHED");
    await expect(s0.run(emitWords)).rejects.toMatchObject({ code: ErrorCodes.ILLEGAL_STATE });
  });

  it("cancel wakes a producer blocked on back-pressure and ends CANCELED with its pool freed", async () => {
    const executor = await startExecutor();
    const descriptors = await wordCountDescriptors(executor, 1_000_000);
    const producer = await executor.deployTask(descriptors[0]);
    const consumer = await executor.deployTask(descriptors[2]);
    let blocked = false;
    const running = producer.run(async (task) => {
      const writer = task.writer<string>();
      for (;;) {
        if (!writer.isAvailable()) {
          blocked = true;
          await writer.getAvailableFuture();
          if (task.signal.aborted) throw task.signal.reason;
        }
        writer.emit("x".repeat(100));
      }
    });
    const deadline = Date.now() + 10_000;
    while (!blocked && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(blocked).toBe(true);
    producer.cancel("stop it");
    await expect(running).rejects.toMatchObject({ code: ErrorCodes.CANCELLED });
    await expect(producer.terminated).resolves.toMatchObject({
      state: "CANCELED",
      error: { code: ErrorCodes.CANCELLED, message: "stop it" },
    });
    consumer.cancel();
    await consumer.terminated;
  });
});

describe("TaskExecutor rejects bad input with a code and the place named", () => {
  it("names the field of a malformed JSON descriptor", async () => {
    const executor = await startExecutor();
    const json = {
      version: 1,
      jobId: new JobID().toString(),
      executionAttemptId: "not-an-attempt",
      taskName: "T",
      numberOfSubtasks: 1,
      producedPartitions: [],
      inputGates: [],
    };
    await expect(executor.deployTask(json)).rejects.toMatchObject({
      code: ErrorCodes.DESCRIPTOR,
      message: expect.stringContaining('"executionAttemptId"'),
    });
  });

  it("names the field of a decoded descriptor that holds a wrong value", async () => {
    const executor = await startExecutor();
    const descriptor = {
      jobId: new JobID(),
      executionAttemptId: undefined,
      taskName: "T",
      numberOfSubtasks: 1,
      producedPartitions: [],
      inputGates: [],
      taskConfiguration: {},
    };
    await expect(executor.deployTask(descriptor)).rejects.toMatchObject({
      code: ErrorCodes.DESCRIPTOR,
      message: expect.stringContaining('"executionAttemptId"'),
    });
  });

  it("names the task, field and known names for an unknown serializer, key selector or invokable, and allocates nothing", async () => {
    const executor = await startExecutor();
    const captured = await wordCountDescriptors(executor, 10);
    const source = captured[0] as {
      producedPartitions: { serializer: string; partitioner: object }[];
    };
    const [before] = segments(executor);
    const badSerializer = structuredClone(source);
    (badSerializer.producedPartitions[0] as { serializer: string }).serializer = "avro";
    await expect(executor.deployTask(badSerializer)).rejects.toMatchObject({
      code: ErrorCodes.TASK_DEPLOYMENT,
      message: expect.stringMatching(
        /Source \(1\/2\)#0: producedPartitions\[0\]\.serializer names the serializer "avro".*known: .*string/,
      ),
    });
    const badKey = structuredClone(source);
    (badKey.producedPartitions[0] as { partitioner: object }).partitioner = {
      name: "HASH",
      keySelector: "byUser",
    };
    await expect(executor.deployTask(badKey)).rejects.toMatchObject({
      code: ErrorCodes.TASK_DEPLOYMENT,
      message: expect.stringContaining('key selector "byUser"'),
    });
    const badInvokable = { ...structuredClone(source), invokable: "sink" };
    await expect(executor.deployTask(badInvokable)).rejects.toMatchObject({
      code: ErrorCodes.TASK_DEPLOYMENT,
      message: expect.stringMatching(/no invokable "sink".*known: count, source/),
    });
    expect(segments(executor)[0]).toBe(before);
    expect(executor.runningTasks).toEqual([]);
  });

  it("fails a task that needs more network memory than the worker has with InsufficientBuffersError naming counts and keys, leaving the pool full", async () => {
    const small = configuration({
      "taskmanager.memory.network.min": "64kb",
      "taskmanager.memory.network.max": "64kb",
      // Flink's hard failure: by default the pools would fall back and the job would deploy.
      "taskmanager.network.memory.exclusive-buffers-fallback": false,
    });
    const executor = await startExecutor(small);
    expect(executor.networkMemory.bytes).toBe(64 * 1024);
    const deployer = await startDeployer(small);
    const graph = new JobGraph("wide");
    const source = graph.addVertex({ name: "Wide", parallelism: 1, invokable: "source" });
    const sink = graph.addVertex({ name: "Sink", parallelism: 40, invokable: "count" });
    graph.connect(source, sink, { partitioner: { name: "REBALANCE" }, serializer: "string" });
    const execution = await deployOn(deployer, graph, [executor]);
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.error).toMatchObject({ code: ErrorCodes.INSUFFICIENT_BUFFERS });
    expect(result.error?.message).toMatch(/required \d+/);
    expect(result.error?.message).toContain("taskmanager.memory.network.min");
    const [available, total] = segments(executor);
    expect(available).toBe(total);
  });

  it("answers updatePartitions for an attempt it does not run with TaskNotFoundError", async () => {
    const executor = await startExecutor();
    await expect(executor.updatePartitions(new ExecutionAttemptID(), [])).rejects.toMatchObject({
      code: ErrorCodes.TASK_NOT_FOUND,
      name: "TaskNotFoundError",
    });
  });

  it("refuses to submit a descriptor without an invokable", async () => {
    const executor = await startExecutor();
    const json = {
      version: 1,
      jobId: new JobID().toString(),
      executionAttemptId: new ExecutionAttemptID().toString(),
      taskName: "T",
      numberOfSubtasks: 1,
      producedPartitions: [],
      inputGates: [],
    };
    const jobMaster = {
      updateTaskExecutionState: () => {},
      requestPartitionProducerState: async () => "RUNNING" as const,
    };
    await expect(
      executor.submitTask(TaskDeploymentDescriptorCodec.fromJSON(json), jobMaster),
    ).rejects.toThrow(/names its invokable/);
  });
});

describe("network memory of a TaskExecutor", () => {
  it("is the configured fraction of the total memory given at start", async () => {
    const executor = await startExecutor(
      configuration({ "taskmanager.memory.network.fraction": 0.25 }),
      { totalMemory: 64 * 1024 * 1024 },
    );
    expect(executor.networkMemory.bytes).toBe(16 * 1024 * 1024);
    expect(segments(executor)[1]).toBe(16 * 256);
  });
});
