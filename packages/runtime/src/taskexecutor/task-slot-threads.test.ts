import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { threadId, Worker } from "node:worker_threads";
import { deferred, ErrorCodes } from "@sluice/core";
import { waitFor } from "@sluice/core/testing";
import type { JsonObject } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import { JobGraph } from "../jobmaster/job-graph.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import { TaskDeploymentDescriptorCodec } from "../messages/task-deployment-descriptor.js";
import type { TaskExecutionState } from "../messages/task-execution-state.js";
import { TaskNotFoundError } from "./errors.js";
import type { TaskExecutor, TaskExecutorOptions } from "./task-executor.js";
import { LocalCluster, localConfiguration, segments } from "./test-support/local-cluster.js";
import { expectedCounts, totals, wordCountGraph } from "./test-support/word-count.js";

/** The slot threads' code: a job module (threads load code by reference). */
const CODE = fileURLToPath(new URL("./test-support/slot-thread-code.mjs", import.meta.url));

const cluster = new LocalCluster();
afterEach(() => cluster.close());

/** A TaskExecutor with two slot threads over the local plugin. */
function startThreaded(
  extra: Record<string, unknown> = {},
  options: TaskExecutorOptions = {},
): Promise<TaskExecutor> {
  return cluster.startExecutor(
    localConfiguration({
      "taskmanager.task-slots.mode": "threaded",
      "taskmanager.numberOfTaskSlots": 2,
      ...extra,
    }),
    { userCodeModule: CODE, ...options },
  );
}

/**
 * How many worker threads this process started so far (any, for whatever reason): a thread's id
 * is the count of threads started before it, so a probe thread's id reads the count.
 */
async function workerThreadsStarted(): Promise<number> {
  const probe = new Worker("", { eval: true });
  const started = probe.threadId - 1;
  await probe.terminate();
  return started;
}

/** A job master that records every state its tasks report. */
function recordingJobMaster() {
  const states: TaskExecutionState[] = [];
  const jobMaster: JobMasterGateway = {
    updateTaskExecutionState: (update) => states.push(update),
    requestPartitionProducerState: async () => "RUNNING",
  };
  const last = (name: string) =>
    states.filter((state) => state.executionAttemptId.jobVertexId.toString() === name).at(-1);
  return { jobMaster, states, last };
}

/**
 * The descriptors of two independent one-subtask vertices, `first` and `second`, running the
 * given invokables (with their configurations), as the job side makes them.
 */
async function twoTasks(
  executor: TaskExecutor,
  first: { invokable: string; configuration?: JsonObject },
  second: { invokable: string; configuration?: JsonObject },
) {
  const graph = new JobGraph("two tasks");
  const a = graph.addVertex({ name: "First", parallelism: 1, ...first });
  const b = graph.addVertex({ name: "Second", parallelism: 1, ...second });
  const captured: unknown[] = [];
  const deployer = await cluster.startDeployer();
  await deployer.deploy(graph, () => ({
    location: executor.location,
    submitTask: async (descriptor) => {
      captured.push(TaskDeploymentDescriptorCodec.toJSON(descriptor));
    },
    cancelTask: async (attempt) => {
      throw new TaskNotFoundError(`nothing runs ${attempt}`);
    },
    updatePartitions: async () => {},
    releasePartitions: async () => {},
  }));
  const [firstTdd, secondTdd] = captured.map((json) =>
    TaskDeploymentDescriptorCodec.fromJSON(json),
  );
  return { a: a.id.toString(), b: b.id.toString(), firstTdd, secondTdd };
}

/** `taskmanager.task-slots.main-thread-slot`: slot 0 on the main thread, slot 1 on a thread. */
const MAIN_THREAD_SLOT = { "taskmanager.task-slots.main-thread-slot": true };

describe("a TaskExecutor whose slots run on worker threads", () => {
  it("runs a keyed job on its two slot threads with every word counted exactly once, and gets every segment back at close", async () => {
    const executor = await startThreaded();
    expect(executor.numberOfSlots).toBe(2);
    const deployer = await cluster.startDeployer();
    const execution = await deployer.deploy(
      wordCountGraph("threaded word count", { words: 20_000 }),
      () => executor,
    );
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(totals(result.results)).toEqual(expectedCounts(20_000, 2));
    await cluster.close();
    const [available, total] = segments(executor);
    expect(available).toBe(total);
  }, 60_000);

  it("limits each slot thread's young generation to taskmanager.task-slots.young-generation-size, 8 MiB unless set", async () => {
    for (const [setting, expected] of [
      [undefined, 8],
      ["16mb", 16],
    ] as const) {
      const executor = await startThreaded(
        setting === undefined ? {} : { "taskmanager.task-slots.young-generation-size": setting },
      );
      const graph = new JobGraph("young generation");
      graph.addVertex({ name: "Limits", parallelism: 2, invokable: "youngGeneration" });
      const deployer = await cluster.startDeployer();
      const result = await (await deployer.deploy(graph, () => executor)).terminated;
      expect(result.status).toBe("FINISHED");
      expect(result.results.get("Limits"), `with ${setting ?? "the default"}`).toEqual([
        expected,
        expected,
      ]);
    }
  }, 60_000);

  // The first task goes to slot 0, the second to slot 1; slot 0 runs on a thread of its own, or
  // on the main thread.
  it.each([
    ["a slot thread", {}, (message: string) => message.includes("the task broke on purpose")],
    [
      "the main-thread slot",
      MAIN_THREAD_SLOT,
      (message: string) => message.includes(`the task broke on purpose (thread ${threadId})`),
    ],
  ] as const)(
    "fails only the task whose code throws on %s, with its own error; the task on the other slot finishes and every segment goes back",
    async (_where, settings, isOwnError) => {
      const executor = await startThreaded(settings);
      const { jobMaster, last } = recordingJobMaster();
      const { a, b, firstTdd, secondTdd } = await twoTasks(
        executor,
        { invokable: "fail" },
        { invokable: "wait", configuration: { ms: 300 } },
      );
      await executor.submitTask(firstTdd as never, jobMaster);
      await executor.submitTask(secondTdd as never, jobMaster);
      await waitFor(() => last(a)?.state === "FAILED" && last(b)?.state === "FINISHED", {
        what: "the failing task FAILED and the other FINISHED",
        timeoutMs: 20_000,
      });
      expect(isOwnError(String(last(a)?.error?.message)), String(last(a)?.error?.message)).toBe(
        true,
      );
      expect(last(b)?.result).toBe("done");
      await waitFor(() => segments(executor)[0] === segments(executor)[1], {
        what: "every segment back in the shared memory",
      });
    },
    60_000,
  );

  it("fails a slot's task with the error that killed its thread, and goes on: a new thread takes the slot, the other slot's task finishes, and every segment comes back", async () => {
    const executor = await startThreaded();
    const { jobMaster, last } = recordingJobMaster();
    const { a, b, firstTdd, secondTdd } = await twoTasks(
      executor,
      { invokable: "crash" },
      { invokable: "wait", configuration: { ms: 1_000 } },
    );
    await executor.submitTask(firstTdd as never, jobMaster);
    await executor.submitTask(secondTdd as never, jobMaster);
    await waitFor(() => last(a)?.state === "FAILED", {
      what: "the crashing task FAILED",
      timeoutMs: 20_000,
    });
    expect(last(a)?.error?.message).toContain("the task crashed its thread on purpose");
    await waitFor(() => last(b)?.state === "FINISHED", {
      what: "the other slot's task FINISHED",
      timeoutMs: 20_000,
    });
    // The task manager goes on with both slots: a keyed job runs on them again.
    const deployer = await cluster.startDeployer();
    const execution = await deployer.deploy(
      wordCountGraph("after the crash", { words: 5_000 }),
      () => executor,
    );
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(totals(result.results)).toEqual(expectedCounts(5_000, 2));
    await cluster.close();
    const [available, total] = segments(executor);
    expect(available).toBe(total);
  }, 60_000);

  it("tells the task manager's fatal-error handler when a task on a slot thread ignores its cancellation, and still ends the task", async () => {
    const fatal = deferred<Error>();
    const executor = await startThreaded(
      { "task.cancellation.timeout": "300ms" },
      { onFatalError: (error) => fatal.resolve(error) },
    );
    const graph = new JobGraph("stuck");
    graph.addVertex({ name: "Stuck", parallelism: 1, invokable: "stuck" });
    const deployer = await cluster.startDeployer();
    const execution = await deployer.deploy(graph, () => executor);
    await waitFor(() => executor.runningTasks[0]?.state === "RUNNING", {
      what: "the stuck task RUNNING",
    });
    execution.cancel();
    const error = await fatal.promise;
    expect(error).toMatchObject({ code: ErrorCodes.TIMEOUT });
    const [vertex] = execution.executionVertices;
    expect(error.message).toContain(
      `Stuck (1/1)#0 (${vertex?.attemptId}) did not end within 300 ms (task.cancellation.timeout)`,
    );
    expect((await execution.terminated).status).toBe("CANCELED");
    await waitFor(() => executor.runningTasks.length === 0, { what: "no task left running" });
  }, 60_000);

  it("passes checkpoints to a task on a slot thread: its snapshots are acknowledged, and a completion that subsumes an older checkpoint tells the task both", async () => {
    const checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-slot-checkpoints-test-"));
    try {
      const executor = await startThreaded({ "state.checkpoints.dir": checkpointsDir });
      const graph = new JobGraph("listening");
      const vertex = graph.addVertex({ name: "Listen", parallelism: 1, invokable: "listen" });
      const captured: unknown[] = [];
      const deployer = await cluster.startDeployer();
      await deployer.deploy(graph, () => ({
        location: executor.location,
        submitTask: async (descriptor) => {
          captured.push({
            ...TaskDeploymentDescriptorCodec.toJSON(descriptor),
            checkpointingMode: "EXACTLY_ONCE",
          });
        },
        cancelTask: async (attempt) => {
          throw new TaskNotFoundError(`nothing runs ${attempt}`);
        },
        updatePartitions: async () => {},
        releasePartitions: async () => {},
      }));
      const tdd = TaskDeploymentDescriptorCodec.fromJSON(captured[0]);
      const { jobMaster, last } = recordingJobMaster();
      const acked: bigint[] = [];
      await executor.submitTask(tdd, {
        ...jobMaster,
        acknowledgeCheckpoint: (ack) => acked.push(ack.checkpointId),
        declineCheckpoint: () => {},
      });
      const attempt = tdd.executionAttemptId;
      for (const id of [1n, 2n]) {
        await executor.triggerCheckpoint(attempt, id, BigInt(Date.now()));
        await waitFor(() => acked.includes(id), { what: `the ack of checkpoint ${id}` });
      }
      await executor.notifyCheckpointComplete(attempt, 2n, BigInt(Date.now()), 1n);
      const id = vertex.id.toString();
      await waitFor(() => last(id)?.state === "FINISHED", {
        what: "the listening task FINISHED",
        timeoutMs: 20_000,
      });
      expect(last(id)?.result).toEqual(["complete 2", "subsume 1"]);
    } finally {
      await cluster.close();
      await rm(checkpointsDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("refuses to start with code given directly, which slot threads cannot run", async () => {
    await expect(
      cluster.startExecutor(localConfiguration({ "taskmanager.task-slots.mode": "threaded" }), {
        invokables: { source: () => undefined },
      }),
    ).rejects.toMatchObject({
      code: ErrorCodes.CONFIG,
      message: expect.stringContaining("userCodeModule"),
    });
  });
});

describe("a TaskExecutor with slot 0 on its main thread (taskmanager.task-slots.main-thread-slot)", () => {
  it("runs a keyed job across slot 0 on the main thread and slot 1 on the one worker thread it starts, every word counted exactly once, and gets every segment back at close", async () => {
    const before = await workerThreadsStarted();
    const executor = await startThreaded(MAIN_THREAD_SLOT);
    expect(executor.numberOfSlots).toBe(2);
    const graph = wordCountGraph("word count, a slot on the main thread", { words: 20_000 });
    // One subtask per slot, as each vertex of the job is placed: where they ran.
    graph.addVertex({ name: "Where", parallelism: 2, invokable: "where" });
    const deployer = await cluster.startDeployer();
    const result = await (await deployer.deploy(graph, () => executor)).terminated;
    expect(result.status).toBe("FINISHED");
    expect(totals(result.results)).toEqual(expectedCounts(20_000, 2));
    const threads = result.results.get("Where") as number[];
    expect(threads).toHaveLength(2);
    expect(
      threads.filter((id) => id === threadId),
      "subtasks on the main thread",
    ).toHaveLength(1);
    // The probe's own thread is not counted: exactly one slot thread was started.
    expect((await workerThreadsStarted()) - before - 1, "worker threads started").toBe(1);
    await cluster.close();
    const [available, total] = segments(executor);
    expect(available).toBe(total);
  }, 60_000);

  it("fails a job whose source breaks midway on the main-thread slot with the source's own error, and every segment its partition held comes back to the shared memory", async () => {
    const executor = await startThreaded(MAIN_THREAD_SLOT);
    const deployer = await cluster.startDeployer();
    const execution = await deployer.deploy(
      wordCountGraph("a source breaks on the main thread", {
        words: 20_000,
        failOnThread: threadId,
        failAfter: 5_000,
      }),
      () => executor,
    );
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(String(result.error?.message)).toContain(
      `the source broke on purpose (thread ${threadId})`,
    );
    await waitFor(() => executor.runningTasks.length === 0, { what: "no task left running" });
    await waitFor(() => segments(executor)[0] === segments(executor)[1], {
      what: "every segment back in the shared memory",
    });
    await cluster.close();
  }, 60_000);

  it("fails the main-thread slot's tasks with an error of the slot's own code (a reply it cannot post), starts the slot again on the main thread, and goes on", async () => {
    const before = await workerThreadsStarted();
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    try {
      const executor = await startThreaded(MAIN_THREAD_SLOT);
      const { jobMaster, last } = recordingJobMaster();
      const { a, b, firstTdd, secondTdd } = await twoTasks(
        executor,
        { invokable: "wait", configuration: { ms: 60_000 } },
        { invokable: "wait", configuration: { ms: 500 } },
      );
      await executor.submitTask(firstTdd as never, jobMaster);
      await executor.submitTask(secondTdd as never, jobMaster);
      const jobId = (firstTdd as NonNullable<typeof firstTdd>).jobId;
      // Slot 1 replies null; slot 0 cannot post its reply.
      expect(await executor.deliverJobMessage(jobId, "unpostable", { thread: threadId })).toBe(
        null,
      );
      await waitFor(() => last(a)?.state === "FAILED", {
        what: "the main-thread slot's task FAILED",
        timeoutMs: 20_000,
      });
      expect(last(a)?.error?.message).toMatch(/could not be cloned/);
      await waitFor(() => last(b)?.state === "FINISHED", {
        what: "the other slot's task FINISHED",
        timeoutMs: 20_000,
      });
      await waitFor(() => warnings.some((w) => w.includes("slot 0 on the main thread failed")), {
        what: "the warning that slot 0 failed",
      });
      // Both slots run a keyed job again, with no second worker thread.
      const deployer = await cluster.startDeployer();
      const execution = await deployer.deploy(
        wordCountGraph("after the failure", { words: 5_000 }),
        () => executor,
      );
      const result = await execution.terminated;
      expect(result.status).toBe("FINISHED");
      expect(totals(result.results)).toEqual(expectedCounts(5_000, 2));
      expect((await workerThreadsStarted()) - before - 1, "worker threads started").toBe(1);
      await cluster.close();
      const [available, total] = segments(executor);
      expect(available).toBe(total);
    } finally {
      process.off("warning", onWarning);
    }
  }, 60_000);

  it("runs a single slot on the main thread without any worker thread", async () => {
    const before = await workerThreadsStarted();
    const executor = await startThreaded({
      ...MAIN_THREAD_SLOT,
      "taskmanager.numberOfTaskSlots": 1,
    });
    const deployer = await cluster.startDeployer();
    const result = await (
      await deployer.deploy(wordCountGraph("one slot", { words: 5_000 }), () => executor)
    ).terminated;
    expect(result.status).toBe("FINISHED");
    expect(totals(result.results)).toEqual(expectedCounts(5_000, 2));
    expect((await workerThreadsStarted()) - before - 1, "worker threads started").toBe(0);
    await cluster.close();
  }, 60_000);
});
