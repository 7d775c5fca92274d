import { access, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, ExecutionAttemptID, JobID, JobVertexID, SnapshotType } from "@sluice/core";
import {
  type CheckpointIDCounter,
  FencingTokenError,
  HighAvailabilityUnavailableError,
} from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsCheckpointStorage } from "../../checkpointing/fs-checkpoint-storage.js";
import type { AcknowledgeCheckpoint } from "../../messages/acknowledge-checkpoint.js";
import { CheckpointFailureReason } from "../../messages/checkpoint-failure-reason.js";
import type { CheckpointTriggerOptions } from "../../messages/checkpoint-trigger-options.js";
import { CheckpointingMode } from "../../messages/checkpointing-mode.js";
import { serializeThrowable } from "../../messages/serialized-throwable.js";
import { CheckpointCoordinator, type CheckpointPlan } from "./checkpoint-coordinator.js";
import type { CheckpointCoordinatorConfiguration } from "./checkpoint-coordinator-configuration.js";
import type {
  CompletedCheckpoint as Completed,
  CompletedCheckpoint,
} from "./completed-checkpoint.js";
import type { TaskToWaitFor } from "./pending-checkpoint.js";
import { StandaloneCheckpointIDCounter } from "./standalone-checkpoint-id-counter.js";

let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "sluice-coordinator-test-"));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

const METRICS = {
  alignmentDurationNanos: 7,
  bytesProcessedDuringAlignment: 11,
  checkpointStartDelayNanos: 13,
  syncDurationMillis: 0,
  asyncDurationMillis: 1,
};

/** A coordinator configuration writing into this test's folder, one checkpoint at a time. */
function testConfiguration(
  overrides: Partial<CheckpointCoordinatorConfiguration> = {},
): CheckpointCoordinatorConfiguration {
  return {
    interval: 60_000,
    mode: CheckpointingMode.EXACTLY_ONCE,
    timeout: 60_000,
    maxConcurrentCheckpoints: 1,
    tolerableCheckpointFailureNumber: 0,
    maxRetainedCheckpoints: 1,
    retention: "NO_EXTERNALIZED_CHECKPOINTS",
    checkpointsDirectory: base,
    unalignedCheckpointsEnabled: false,
    alignedCheckpointTimeout: 0,
    checkpointsAfterTasksFinish: true,
    ...overrides,
  };
}

/**
 * A coordinator of a two-task job (a source and a sink) whose source runs behind a gateway that
 * records the triggers; tests play the tasks by writing snapshots and acknowledging.
 */
function harness(
  overrides: Partial<CheckpointCoordinatorConfiguration> = {},
  options: {
    running?: () => boolean;
    triggerFails?: boolean;
    store?: (checkpoint: CompletedCheckpoint) => Promise<readonly bigint[] | undefined>;
    counter?: CheckpointIDCounter;
    discardRetainedOnShutdown?: boolean;
    jobId?: JobID;
  } = {},
) {
  const jobId = options.jobId ?? new JobID();
  const vertex = new JobVertexID();
  const tasks: TaskToWaitFor[] = [0, 1].map((i) => ({
    executionAttemptId: new ExecutionAttemptID(),
    vertexId: vertex,
    vertexName: i === 0 ? "Source" : "Sink",
    subtaskIndex: i,
  }));
  const triggered: bigint[] = [];
  /** The options of each trigger (undefined: a checkpoint's). */
  const triggerOptions: (CheckpointTriggerOptions | undefined)[] = [];
  const failovers: Error[] = [];
  /**
   * The notifications each task got, as `complete N`, `complete N (subsumes S)` or
   * `aborted N (latest L)`.
   */
  const notified: string[][] = [[], []];
  const configuration = testConfiguration({ tolerableCheckpointFailureNumber: 100, ...overrides });
  const plan: CheckpointPlan = {
    tasksToTrigger: [
      {
        executionAttemptId: (tasks[0] as TaskToWaitFor).executionAttemptId,
        name: "Source (1/1)#0",
        gateway: {
          triggerCheckpoint: async (_attempt, checkpointId, _timestamp, trigger) => {
            if (options.triggerFails) throw new Error("the TaskExecutor is unreachable");
            triggered.push(checkpointId);
            triggerOptions.push(trigger);
          },
        },
      },
    ],
    tasksToWaitFor: tasks,
    tasksToCommitTo: tasks.map((task, i) => ({
      executionAttemptId: task.executionAttemptId,
      name: `task ${i}`,
      gateway: {
        notifyCheckpointComplete: async (attempt, checkpointId, _timestamp, subsumed) => {
          expect(attempt.equals(task.executionAttemptId)).toBe(true);
          const note = subsumed === undefined ? "" : ` (subsumes ${subsumed})`;
          notified[i]?.push(`complete ${checkpointId}${note}`);
        },
        notifyCheckpointAborted: async (_attempt, checkpointId, latest) => {
          notified[i]?.push(`aborted ${checkpointId} (latest ${latest})`);
        },
      },
    })),
  };
  const coordinator = new CheckpointCoordinator({
    jobId,
    configuration,
    calculateCheckpointPlan: () =>
      (options.running ?? (() => true))() ? plan : "Sink (1/1)#0 is DEPLOYING",
    onTolerableFailuresExceeded: (cause) => failovers.push(cause),
    ...(options.store === undefined ? {} : { storeCompletedCheckpoint: options.store }),
    ...(options.counter === undefined ? {} : { checkpointIdCounter: options.counter }),
    ...(options.discardRetainedOnShutdown === undefined
      ? {}
      : { discardRetainedOnShutdown: options.discardRetainedOnShutdown }),
  });
  const storage = new FsCheckpointStorage(base, jobId);
  /** Task `i` writes its snapshot of `checkpointId`; returns its acknowledgement, not sent. */
  const snapshot = async (i: number, checkpointId: bigint): Promise<AcknowledgeCheckpoint> => {
    const attempt = (tasks[i] as TaskToWaitFor).executionAttemptId;
    const stateHandle = await storage.writeTaskState(checkpointId, attempt, `task ${i}`, `${i}`);
    return { jobId, executionAttemptId: attempt, checkpointId, metrics: METRICS, stateHandle };
  };
  /** Task `i` writes its snapshot of `checkpointId` and acknowledges it. */
  const acknowledge = async (i: number, checkpointId: bigint): Promise<AcknowledgeCheckpoint> => {
    const ack = await snapshot(i, checkpointId);
    coordinator.receiveAcknowledgeMessage(ack);
    return ack;
  };
  /**
   * Task `i` writes its snapshot of savepoint `checkpointId` into the folder its trigger named
   * (as the barrier carries it) and acknowledges it.
   */
  const acknowledgeSavepoint = async (i: number, checkpointId: bigint) => {
    const location = triggerOptions[triggered.indexOf(checkpointId)]?.targetLocation;
    const attempt = (tasks[i] as TaskToWaitFor).executionAttemptId;
    const stateHandle = await storage.writeTaskState(
      checkpointId,
      attempt,
      `task ${i}`,
      `${i}`,
      undefined,
      location,
    );
    coordinator.receiveAcknowledgeMessage({
      jobId,
      executionAttemptId: attempt,
      checkpointId,
      metrics: METRICS,
      stateHandle,
    });
  };
  const decline = (i: number, checkpointId: bigint, reason: CheckpointFailureReason) =>
    coordinator.receiveDeclineMessage({
      jobId,
      executionAttemptId: (tasks[i] as TaskToWaitFor).executionAttemptId,
      checkpointId,
      reason,
      error: serializeThrowable(new Error("the snapshot broke")),
    });
  return {
    coordinator,
    storage,
    tasks,
    triggered,
    triggerOptions,
    acknowledgeSavepoint,
    failovers,
    snapshot,
    acknowledge,
    decline,
    jobId,
    notified,
  };
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** Polls `condition` until it holds, failing after 10 s. */
async function eventually(
  what: string,
  condition: () => boolean | Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe("CheckpointCoordinator", () => {
  it("triggers at the sources and completes once every task acknowledged, writing _metadata", async () => {
    const { coordinator, triggered, acknowledge, jobId } = harness();
    const completion = coordinator.triggerCheckpoint();
    await eventually("the source got the trigger", () => triggered.length === 1);
    expect(triggered).toEqual([1n]);
    await acknowledge(0, 1n);
    expect(coordinator.numberOfCompletedCheckpoints).toBe(0);
    await acknowledge(1, 1n);
    const checkpoint = await completion;
    expect(checkpoint.checkpointId).toBe(1n);
    expect(coordinator.numberOfCompletedCheckpoints).toBe(1);
    expect(coordinator.numberOfPendingCheckpoints).toBe(0);
    expect(coordinator.latestCompletedCheckpoint).toBe(checkpoint);
    expect(checkpoint.subtaskStates).toHaveLength(2);
    expect(checkpoint.alignmentDurationNanos).toBe(7);
    expect(checkpoint.bytesProcessedDuringAlignment).toBe(22);
    expect(checkpoint.checkpointStartDelayNanos).toBe(13);
    const metadata = await FsCheckpointStorage.readMetadata(checkpoint.metadataPath);
    expect(metadata).toMatchObject({ jobId: jobId.toString(), checkpointId: "1" });
    expect((metadata.tasks as { vertexName: string }[]).map((t) => t.vertexName)).toEqual([
      "Source",
      "Sink",
    ]);
    await coordinator.shutdown("FINISHED");
  });

  it("aborts a checkpoint a task declines and deletes the snapshots already written", async () => {
    const { coordinator, acknowledge, decline } = harness();
    const completion = coordinator.triggerCheckpoint();
    const ack = await acknowledge(0, 1n);
    decline(1, 1n, CheckpointFailureReason.CHECKPOINT_DECLINED);
    await expect(completion).rejects.toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringMatching(
        /checkpoint 1 was aborted \(CHECKPOINT_DECLINED\): the snapshot broke/,
      ),
    });
    expect(coordinator.numberOfAbortedCheckpoints).toBe(1);
    expect(coordinator.lastCheckpointFailure).toMatchObject({
      checkpointId: 1n,
      reason: CheckpointFailureReason.CHECKPOINT_DECLINED,
    });
    await coordinator.shutdown("FINISHED");
    expect(await exists(ack.stateHandle?.path as string)).toBe(false);
    expect(await readdir(base)).toEqual([]);
  });

  it("aborts a checkpoint whose acknowledgement names a file outside its folder, and never deletes that file", async () => {
    const { coordinator, acknowledge, snapshot } = harness();
    const outside = path.join(base, "not-a-snapshot.txt");
    await writeFile(outside, "keep me");
    const completion = coordinator.triggerCheckpoint();
    const ack = await acknowledge(0, 1n);
    const forged = await snapshot(1, 1n);
    coordinator.receiveAcknowledgeMessage({
      ...forged,
      stateHandle: { path: outside, size: 7 },
    });
    await expect(completion).rejects.toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringContaining(
        `checkpoint 1 was aborted (CHECKPOINT_DECLINED): the snapshot of task ${forged.executionAttemptId} is ${outside}, not ${forged.stateHandle?.path}, its file in the checkpoint's folder`,
      ),
    });
    // A late one, after the abort, is not deleted either.
    coordinator.receiveAcknowledgeMessage({ ...forged, stateHandle: { path: outside, size: 7 } });
    await coordinator.shutdown("FINISHED");
    expect(await exists(ack.stateHandle?.path as string)).toBe(false);
    expect(await readFile(outside, "utf8")).toBe("keep me");
  });

  it("never deletes another task's snapshot that an acknowledgement names, and completes the checkpoint that holds it", async () => {
    const { coordinator, acknowledge, jobId } = harness({ retention: "RETAIN_ON_CANCELLATION" });
    const completion = coordinator.triggerCheckpoint();
    const own = await acknowledge(0, 1n);
    const ownPath = own.stateHandle?.path as string;
    // An attempt the checkpoint does not wait for (a stale one, or another job's) names task 0's
    // snapshot: it must not be taken for that attempt's garbage.
    coordinator.receiveAcknowledgeMessage({
      jobId,
      executionAttemptId: new ExecutionAttemptID(),
      checkpointId: 1n,
      metrics: METRICS,
      ...(own.stateHandle === undefined ? {} : { stateHandle: own.stateHandle }),
    });
    const other = await acknowledge(1, 1n);
    const checkpoint = await completion;
    // Retained at the end, so every file operation is settled and nothing more is deleted.
    await coordinator.shutdown("FINISHED");
    expect(checkpoint.subtaskStates.map((s) => s.stateHandle?.path).sort()).toEqual(
      [ownPath, other.stateHandle?.path].sort(),
    );
    expect(await exists(ownPath)).toBe(true);
    expect(coordinator.discardErrors).toEqual([]);
  });

  it("fails a checkpoint whose task names another task's snapshot as its own", async () => {
    const { coordinator, acknowledge, snapshot } = harness();
    const completion = coordinator.triggerCheckpoint();
    const own = await acknowledge(0, 1n);
    const other = await snapshot(1, 1n);
    coordinator.receiveAcknowledgeMessage({
      ...other,
      ...(own.stateHandle === undefined ? {} : { stateHandle: own.stateHandle }),
    });
    await expect(completion).rejects.toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringContaining(
        `is ${own.stateHandle?.path}, not ${other.stateHandle?.path}`,
      ),
    });
    await coordinator.shutdown("FINISHED");
  });

  it("aborts a checkpoint not acknowledged within execution.checkpointing.timeout", async () => {
    const { coordinator, acknowledge, snapshot } = harness({ timeout: 20 });
    // Expected from the start: the 20 ms may pass before the acknowledgements below are made.
    const expired = expect(coordinator.triggerCheckpoint()).rejects.toThrow(/CHECKPOINT_EXPIRED/);
    await acknowledge(0, 1n);
    const late = await snapshot(1, 1n);
    await expired;
    expect(coordinator.numberOfAbortedCheckpoints).toBe(1);
    // The task that was late acknowledges after all: its snapshot is deleted.
    coordinator.receiveAcknowledgeMessage(late);
    await coordinator.shutdown("FINISHED");
    expect(await exists(late.stateHandle?.path as string)).toBe(false);
    expect(await readdir(base)).toEqual([]);
  });

  it("subsumes older pending checkpoints when a newer one completes", async () => {
    const { coordinator, acknowledge } = harness({ maxConcurrentCheckpoints: 2 });
    const first = coordinator.triggerCheckpoint();
    const second = coordinator.triggerCheckpoint();
    await acknowledge(0, 1n);
    await acknowledge(0, 2n);
    await acknowledge(1, 2n);
    await expect(second).resolves.toMatchObject({ checkpointId: 2n });
    await expect(first).rejects.toThrow(/CHECKPOINT_SUBSUMED/);
    expect(coordinator.numberOfCompletedCheckpoints).toBe(1);
    expect(coordinator.numberOfAbortedCheckpoints).toBe(1);
    await coordinator.shutdown("FINISHED");
  });

  it("aborts the pending checkpoints a task did not acknowledge before it finished", async () => {
    const { coordinator, acknowledge, tasks } = harness();
    const completion = coordinator.triggerCheckpoint();
    await acknowledge(1, 1n);
    coordinator.taskFinished((tasks[1] as TaskToWaitFor).executionAttemptId);
    expect(coordinator.numberOfPendingCheckpoints).toBe(1);
    coordinator.taskFinished((tasks[0] as TaskToWaitFor).executionAttemptId);
    await expect(completion).rejects.toThrow(/CHECKPOINT_DECLINED_TASK_CLOSING/);
    await coordinator.shutdown("FINISHED");
  });

  it("keeps state.checkpoints.num-retained checkpoints and deletes older ones", async () => {
    const { coordinator, acknowledge, storage } = harness({ maxRetainedCheckpoints: 2 });
    for (let id = 1n; id <= 3n; id++) {
      const completion = coordinator.triggerCheckpoint();
      await acknowledge(0, id);
      await acknowledge(1, id);
      await completion;
    }
    expect(coordinator.completedCheckpoints.map((c) => c.checkpointId)).toEqual([2n, 3n]);
    await eventually("checkpoint 1 is deleted", async () => {
      return (await readdir(storage.jobDirectory)).sort().join() === "chk-2,chk-3";
    });
    await coordinator.shutdown("FAILED");
    expect(await readdir(base)).toEqual([]);
    expect(coordinator.latestCompletedCheckpoint?.checkpointId).toBe(3n);
  });

  it("keeps the retained checkpoints after the job by externalized-checkpoint-retention", async () => {
    const { coordinator, acknowledge, storage } = harness({
      retention: "DELETE_ON_CANCELLATION",
    });
    const completion = coordinator.triggerCheckpoint();
    await acknowledge(0, 1n);
    await acknowledge(1, 1n);
    await completion;
    await coordinator.shutdown("FAILED");
    expect((await readdir(storage.checkpointDirectory(1n))).sort()).toHaveLength(3);
  });

  it("starts no checkpoint while a task does not run or too many are pending", async () => {
    let running = false;
    const { coordinator, triggered } = harness({}, { running: () => running });
    await expect(coordinator.triggerCheckpoint()).rejects.toThrow(/Sink \(1\/1\)#0 is DEPLOYING/);
    running = true;
    const pending = coordinator.triggerCheckpoint();
    await expect(coordinator.triggerCheckpoint()).rejects.toThrow(/max-concurrent-checkpoints: 1/);
    await eventually("the source got the trigger", () => triggered.length === 1);
    expect(coordinator.numberOfAbortedCheckpoints).toBe(0);
    const aborted = expect(pending).rejects.toThrow(/CHECKPOINT_COORDINATOR_SHUTDOWN/);
    await coordinator.shutdown("CANCELED");
    await aborted;
  });

  it("aborts a checkpoint whose trigger cannot be delivered", async () => {
    const { coordinator } = harness({}, { triggerFails: true });
    await expect(coordinator.triggerCheckpoint()).rejects.toThrow(
      /TRIGGER_CHECKPOINT_FAILURE.*Source \(1\/1\)#0: the TaskExecutor is unreachable/,
    );
    await coordinator.shutdown("FINISHED");
  });

  it("triggers every interval once its scheduler runs", async () => {
    const { coordinator, triggered, acknowledge } = harness({ interval: 10 });
    coordinator.startCheckpointScheduler();
    for (let id = 1n; id <= 3n; id++) {
      await eventually(`checkpoint ${id} is triggered`, () => triggered.length >= Number(id));
      await acknowledge(0, id);
      await acknowledge(1, id);
    }
    await eventually("three completed", () => coordinator.numberOfCompletedCheckpoints === 3);
    await coordinator.shutdown("FINISHED");
  });

  it("asks for a failover when more checkpoints fail in a row than tolerated, counting only real failures", async () => {
    const { coordinator, decline, failovers, triggered } = harness({
      tolerableCheckpointFailureNumber: 1,
    });
    const attempt = async (reason: CheckpointFailureReason) => {
      const completion = coordinator.triggerCheckpoint();
      const id = BigInt(coordinator.numberOfAbortedCheckpoints + 1);
      await eventually(`checkpoint ${id} is triggered`, () => triggered.includes(id));
      decline(1, id, reason);
      await expect(completion).rejects.toThrow(reason);
    };
    await attempt(CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER);
    await attempt(CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_CLOSING);
    await attempt(CheckpointFailureReason.CHECKPOINT_DECLINED);
    expect(failovers).toEqual([]);
    await attempt(CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION);
    expect(failovers).toHaveLength(1);
    expect(failovers[0]).toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringMatching(/2 checkpoint failure\(s\) in a row exceed/),
    });
    await coordinator.shutdown("FINISHED");
  });
});

describe("CheckpointCoordinator notifications (notifyCheckpointComplete / notifyCheckpointAborted)", () => {
  it("testTriggerAndConfirmSimpleCheckpoint: every task is told once the checkpoint completed", async () => {
    const { coordinator, acknowledge, notified } = harness();
    const completion = coordinator.triggerCheckpoint();
    await acknowledge(0, 1n);
    expect(notified).toEqual([[], []]);
    await acknowledge(1, 1n);
    await completion;
    await eventually("both tasks were told", () => notified.every((n) => n.length === 1));
    expect(notified).toEqual([["complete 1"], ["complete 1"]]);
  });

  it("testTriggerAndDeclineCheckpointSimple: a declined checkpoint is reported aborted to every task", async () => {
    const { coordinator, acknowledge, decline, notified } = harness();
    const completion = coordinator.triggerCheckpoint();
    completion.catch(() => {});
    await acknowledge(0, 1n);
    decline(1, 1n, CheckpointFailureReason.CHECKPOINT_DECLINED);
    await expect(completion).rejects.toThrow(/aborted/);
    await eventually("both tasks were told", () => notified.every((n) => n.length === 1));
    expect(notified).toEqual([["aborted 1 (latest 0)"], ["aborted 1 (latest 0)"]]);
  });

  it("testSuccessfulCheckpointSubsumesUnsuccessful: an older pending checkpoint is reported aborted after the newer one completed", async () => {
    const { coordinator, acknowledge, notified } = harness({ maxConcurrentCheckpoints: 2 });
    const first = coordinator.triggerCheckpoint();
    first.catch(() => {});
    const second = coordinator.triggerCheckpoint();
    await acknowledge(0, 2n);
    await acknowledge(1, 2n);
    await second;
    await expect(first).rejects.toThrow(/CHECKPOINT_SUBSUMED/);
    await eventually("both tasks were told twice", () => notified.every((n) => n.length === 2));
    expect(notified[0]).toEqual(["complete 2", "aborted 1 (latest 2)"]);
    expect(notified[1]).toEqual(["complete 2", "aborted 1 (latest 2)"]);
  });

  it("tells every task which retained checkpoint a completion subsumed, with the completion", async () => {
    const { coordinator, acknowledge, notified } = harness({ maxRetainedCheckpoints: 2 });
    for (let id = 1n; id <= 3n; id++) {
      const completion = coordinator.triggerCheckpoint();
      await acknowledge(0, id);
      await acknowledge(1, id);
      await completion;
    }
    await eventually("both tasks were told thrice", () => notified.every((n) => n.length === 3));
    // Two are retained: the third completion drops the first.
    for (const task of notified)
      expect(task).toEqual(["complete 1", "complete 2", "complete 3 (subsumes 1)"]);
    await coordinator.shutdown("FINISHED");
  });

  it("stores a completed checkpoint before it tells any task, as Flink's CompletedCheckpointStore", async () => {
    const stored: bigint[] = [];
    let release: (() => void) | undefined;
    const { coordinator, acknowledge, notified } = harness(
      {},
      {
        store: (checkpoint) =>
          new Promise<undefined>((resolve) => {
            release = () => {
              stored.push(checkpoint.checkpointId);
              resolve(undefined);
            };
          }),
      },
    );
    const completion = coordinator.triggerCheckpoint();
    await acknowledge(0, 1n);
    await acknowledge(1, 1n);
    await eventually("the store was asked", () => release !== undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Every task acknowledged, but the store has not answered: nobody may commit yet.
    expect(notified).toEqual([[], []]);
    expect(coordinator.latestCompletedCheckpoint).toBeUndefined();
    release?.();
    await completion;
    expect(stored).toEqual([1n]);
    await eventually("both tasks were told", () => notified.every((n) => n.length === 1));
    expect(notified).toEqual([["complete 1"], ["complete 1"]]);
  });

  it("fails a checkpoint the store refuses for a lost leadership, tells the tasks it was aborted and deletes its folder", async () => {
    const { coordinator, acknowledge, notified, storage } = harness(
      {},
      {
        store: async () => {
          throw new FencingTokenError("refused: the fencing token is not the leader's");
        },
      },
    );
    const completion = coordinator.triggerCheckpoint();
    completion.catch(() => {});
    await acknowledge(0, 1n);
    await acknowledge(1, 1n);
    await expect(completion).rejects.toThrow(/FINALIZE_CHECKPOINT_FAILURE.*fencing token/);
    await eventually("both tasks were told", () => notified.every((n) => n.length === 1));
    expect(notified).toEqual([["aborted 1 (latest 0)"], ["aborted 1 (latest 0)"]]);
    expect(coordinator.latestCompletedCheckpoint).toBeUndefined();
    await eventually(
      "the folder's deletion",
      async () => !(await exists(storage.checkpointDirectory(1n))),
    );
  });

  it("a notification that cannot be delivered (the task is gone) changes nothing at the coordinator", async () => {
    const jobId = new JobID();
    const task: TaskToWaitFor = {
      executionAttemptId: new ExecutionAttemptID(),
      vertexId: new JobVertexID(),
      vertexName: "Sink",
      subtaskIndex: 0,
    };
    let attempts = 0;
    let triggered = false;
    const coordinator = new CheckpointCoordinator({
      jobId,
      configuration: testConfiguration(),
      calculateCheckpointPlan: () => ({
        tasksToTrigger: [
          {
            executionAttemptId: task.executionAttemptId,
            name: "Sink",
            gateway: {
              triggerCheckpoint: async () => {
                triggered = true;
              },
            },
          },
        ],
        tasksToWaitFor: [task],
        tasksToCommitTo: [
          {
            executionAttemptId: task.executionAttemptId,
            name: "Sink",
            gateway: {
              notifyCheckpointComplete: async () => {
                attempts++;
                throw new Error("no such task");
              },
            },
          },
        ],
      }),
      onTolerableFailuresExceeded: () => {
        throw new Error("no failover expected");
      },
    });
    const completion = coordinator.triggerCheckpoint();
    await eventually("the trigger", () => triggered);
    coordinator.receiveAcknowledgeMessage({
      jobId,
      executionAttemptId: task.executionAttemptId,
      checkpointId: 1n,
      metrics: METRICS,
    });
    await completion;
    await eventually("the notification was attempted", () => attempts === 1);
    expect(coordinator.numberOfCompletedCheckpoints).toBe(1);
    expect(coordinator.numberOfAbortedCheckpoints).toBe(0);
    await coordinator.shutdown("FINISHED");
  });
});

/** Triggers checkpoint `id` in `h` and lets both tasks acknowledge it; resolves once completed. */
async function complete(h: ReturnType<typeof harness>, id: bigint): Promise<CompletedCheckpoint> {
  const completion = h.coordinator.triggerCheckpoint();
  await eventually(`checkpoint ${id} is triggered`, () => h.triggered.includes(id));
  await h.acknowledge(0, id);
  await h.acknowledge(1, id);
  return completion;
}

describe("CheckpointCoordinator under high availability (ids, storing, suspension)", () => {
  it("takes its checkpoint ids from the counter it is given: ids another job manager took are never used again, and a restore continues above the restored id", async () => {
    const jobId = new JobID();
    const counter = new StandaloneCheckpointIDCounter();
    const first = harness({}, { counter, jobId });
    expect((await complete(first, 1n)).checkpointId).toBe(1n);
    expect((await complete(first, 2n)).checkpointId).toBe(2n);
    await first.coordinator.shutdown("SUSPENDED");
    // The next leader shares the counter and restores checkpoint 2: its first id is 3, so it
    // never writes into the folder of a checkpoint the old leader used.
    const second = harness({}, { counter, jobId });
    second.coordinator.restoreLatestCheckpoint(
      first.coordinator.latestCompletedCheckpoint as Completed,
    );
    expect((await complete(second, 3n)).checkpointId).toBe(3n);
    await second.coordinator.shutdown("SUSPENDED");
    // A counter behind the restored checkpoint (a checkpoint of another cluster) is moved past it.
    const behind = new StandaloneCheckpointIDCounter();
    const third = harness({}, { counter: behind, jobId });
    third.coordinator.restoreLatestCheckpoint(
      second.coordinator.latestCompletedCheckpoint as Completed,
    );
    expect((await complete(third, 4n)).checkpointId).toBe(4n);
    expect(await behind.get()).toBe(5n);
    await third.coordinator.shutdown("FINISHED");
  });

  it("refuses an id the counter hands out a second time", async () => {
    const broken: CheckpointIDCounter = {
      getAndIncrement: async () => 1n,
      get: async () => 1n,
      setCount: async () => {},
      shutdown: async () => {},
    };
    const h = harness({}, { counter: broken });
    await complete(h, 1n);
    await expect(h.coordinator.triggerCheckpoint()).rejects.toThrow(
      /handed out 1, not above 1, which was taken already/,
    );
    await h.coordinator.shutdown("FINISHED");
  });

  it("starts no checkpoint and counts no failure when the counter refuses (the job manager lost its leadership)", async () => {
    const fenced: CheckpointIDCounter = {
      getAndIncrement: async () => {
        throw new FencingTokenError("incrementing the counter was refused: not the leader");
      },
      get: async () => 1n,
      setCount: async () => {},
      shutdown: async () => {},
    };
    const h = harness({ tolerableCheckpointFailureNumber: 0 }, { counter: fenced });
    await expect(h.coordinator.triggerCheckpoint()).rejects.toThrow(
      /no checkpoint id: .*not the leader/,
    );
    expect(h.triggered).toEqual([]);
    expect(h.coordinator.numberOfAbortedCheckpoints).toBe(0);
    expect(h.failovers).toEqual([]);
    await h.coordinator.shutdown("FINISHED");
  });

  it("keeps a checkpoint whose storing may have succeeded (the coordination service did not answer): a new leader may restore it", async () => {
    const h = harness(
      {},
      {
        store: async () => {
          throw new HighAvailabilityUnavailableError("etcd did not answer the transaction");
        },
      },
    );
    const completion = h.coordinator.triggerCheckpoint();
    completion.catch(() => {});
    await eventually("the trigger", () => h.triggered.length === 1);
    await h.acknowledge(0, 1n);
    await h.acknowledge(1, 1n);
    await expect(completion).rejects.toThrow(/FINALIZE_CHECKPOINT_FAILURE.*did not answer/);
    await h.coordinator.shutdown("FAILED");
    expect((await readdir(h.storage.checkpointDirectory(1n))).sort()).toHaveLength(3);
  });

  it("deletes the checkpoints the store dropped, and only those", async () => {
    const dropped: bigint[][] = [[], [1n]];
    const h = harness(
      { maxRetainedCheckpoints: 1 },
      { store: async () => dropped.shift() ?? [], discardRetainedOnShutdown: false },
    );
    await complete(h, 1n);
    await complete(h, 2n);
    await eventually(
      "checkpoint 1 is deleted",
      async () => !(await exists(h.storage.checkpointDirectory(1n))),
    );
    // The store kept checkpoint 2 and dropped nothing for 3: with one retained, the coordinator
    // forgets 2 but leaves its files to the store.
    await complete(h, 3n);
    expect(h.coordinator.completedCheckpoints.map((c) => c.checkpointId)).toEqual([3n]);
    await h.coordinator.shutdown("FINISHED");
    expect((await readdir(h.storage.jobDirectory)).sort()).toEqual(["chk-2", "chk-3"]);
  });

  it("deletes nothing once suspended: the pending checkpoint's snapshot and the retained checkpoints stay, and none is triggered", async () => {
    const h = harness({ maxConcurrentCheckpoints: 1 });
    await complete(h, 1n);
    const pending = h.coordinator.triggerCheckpoint();
    pending.catch(() => {});
    await eventually("checkpoint 2 is triggered", () => h.triggered.includes(2n));
    const ack = await h.acknowledge(0, 2n);
    h.coordinator.suspend();
    await expect(pending).rejects.toThrow(/CHECKPOINT_COORDINATOR_SUSPEND/);
    await expect(h.coordinator.triggerCheckpoint()).rejects.toThrow(/shut down/);
    // A late acknowledgement of the aborted checkpoint is not deleted either.
    h.coordinator.receiveAcknowledgeMessage(await h.snapshot(1, 2n));
    await h.coordinator.shutdown("SUSPENDED");
    expect(await exists(ack.stateHandle?.path as string)).toBe(true);
    expect((await readdir(h.storage.checkpointDirectory(1n))).sort()).toHaveLength(3);
    expect((await readdir(h.storage.checkpointDirectory(2n))).sort()).toHaveLength(2);
  });

  it("keeps the retained checkpoints at the job's end when their store's owner removes them (discardRetainedOnShutdown false)", async () => {
    const h = harness({}, { discardRetainedOnShutdown: false });
    await complete(h, 1n);
    await h.coordinator.shutdown("FINISHED");
    expect((await readdir(h.storage.checkpointDirectory(1n))).sort()).toHaveLength(3);
  });
});

describe("CheckpointCoordinator savepoints (Flink's CheckpointCoordinatorTest)", () => {
  it("testTriggerAndConfirmSimpleSavepoint: a savepoint goes into a folder of its own, completes once every task acknowledged, is not retained, and no task is told of it", async () => {
    const savepoints = path.join(base, "savepoints");
    const { coordinator, triggered, triggerOptions, acknowledgeSavepoint, notified, jobId } =
      harness();
    const completion = coordinator.triggerSavepoint(savepoints);
    await eventually("the source got the trigger", () => triggered.length === 1);
    const location = triggerOptions[0]?.targetLocation as string;
    expect(triggerOptions[0]?.snapshotType).toBe(SnapshotType.SAVEPOINT);
    expect(path.dirname(location)).toBe(savepoints);
    expect(path.basename(location)).toMatch(
      new RegExp(`^savepoint-${jobId.toString().slice(0, 6)}-[0-9a-f]{12}$`),
    );
    await acknowledgeSavepoint(0, 1n);
    await acknowledgeSavepoint(1, 1n);
    const savepoint = await completion;
    expect(savepoint.isSavepoint).toBe(true);
    expect(savepoint.metadataPath).toBe(path.join(location, "_metadata"));
    expect(savepoint.externalPointer).toBe(location);
    const metadata = await FsCheckpointStorage.readMetadata(savepoint.metadataPath);
    expect(
      (metadata.tasks as { stateHandle: { path: string } }[]).map((t) => t.stateHandle.path),
    ).toEqual(savepoint.subtaskStates.map((state) => path.basename(state.stateHandle?.path ?? "")));
    expect(coordinator.completedCheckpoints).toEqual([]);
    expect(coordinator.latestCompletedCheckpoint).toBeUndefined();
    expect(notified).toEqual([[], []]);
    // The job's end deletes retained checkpoints, never a savepoint.
    await coordinator.shutdown("FINISHED");
    expect(await exists(savepoint.metadataPath)).toBe(true);
  });

  it("testSavepointsAreNotSubsumed: a completed checkpoint aborts older pending checkpoints but not an older pending savepoint, and a savepoint subsumes nothing", async () => {
    const savepoints = path.join(base, "savepoints");
    const { coordinator, triggered, acknowledge, acknowledgeSavepoint, notified } = harness({
      maxConcurrentCheckpoints: 10,
    });
    const savepoint1 = coordinator.triggerSavepoint(savepoints);
    await eventually("savepoint 1 triggered", () => triggered.length === 1);
    const checkpoint2 = coordinator.triggerCheckpoint();
    await eventually("checkpoint 2 triggered", () => triggered.length === 2);
    const checkpoint3 = coordinator.triggerCheckpoint();
    await eventually("checkpoint 3 triggered", () => triggered.length === 3);
    await acknowledge(0, 3n);
    await acknowledge(1, 3n);
    await checkpoint3;
    await expect(checkpoint2).rejects.toThrow(/CHECKPOINT_SUBSUMED/);
    expect(coordinator.numberOfPendingCheckpoints).toBe(1);
    const savepoint4 = coordinator.triggerSavepoint(savepoints);
    await eventually("savepoint 4 triggered", () => triggered.length === 4);
    const checkpoint5 = coordinator.triggerCheckpoint();
    await eventually("checkpoint 5 triggered", () => triggered.length === 5);
    await acknowledgeSavepoint(0, 4n);
    await acknowledgeSavepoint(1, 4n);
    await savepoint4;
    // A savepoint subsumes no checkpoint, and no task is told of it.
    expect(coordinator.numberOfPendingCheckpoints).toBe(2);
    await acknowledgeSavepoint(0, 1n);
    await acknowledgeSavepoint(1, 1n);
    await savepoint1;
    await acknowledge(0, 5n);
    await acknowledge(1, 5n);
    await checkpoint5;
    expect(notified[0]?.filter((note) => note.startsWith("complete"))).toEqual([
      "complete 3",
      "complete 5 (subsumes 3)",
    ]);
  });

  it("testConcurrentSavepoints: savepoints are not held back by max-concurrent-checkpoints", async () => {
    const savepoints = path.join(base, "savepoints");
    const { coordinator, triggered, acknowledgeSavepoint } = harness({
      maxConcurrentCheckpoints: 1,
    });
    const completions = [0, 1, 2, 3, 4].map(() => coordinator.triggerSavepoint(savepoints));
    await eventually("every savepoint triggered", () => triggered.length === 5);
    for (const id of [...triggered].reverse()) {
      await acknowledgeSavepoint(0, id);
      await acknowledgeSavepoint(1, id);
    }
    const done = await Promise.all(completions);
    expect(new Set(done.map((s) => s.externalPointer)).size).toBe(5);
  });

  it("deletes the folder of an aborted savepoint and counts no failure towards tolerable-failed-checkpoints", async () => {
    const savepoints = path.join(base, "savepoints");
    const { coordinator, triggered, triggerOptions, acknowledgeSavepoint, decline, failovers } =
      harness({ tolerableCheckpointFailureNumber: 0 });
    const completion = coordinator.triggerSavepoint(savepoints);
    await eventually("the source got the trigger", () => triggered.length === 1);
    const location = triggerOptions[0]?.targetLocation as string;
    await acknowledgeSavepoint(0, 1n);
    decline(1, 1n, CheckpointFailureReason.CHECKPOINT_DECLINED);
    await expect(completion).rejects.toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringMatching(/^savepoint 1 was aborted \(CHECKPOINT_DECLINED\)/),
    });
    await eventually("the savepoint's folder is deleted", async () => !(await exists(location)));
    expect(failovers).toEqual([]);
  });

  it("refuses a savepoint without a target folder when state.savepoints.dir is unset, naming both", async () => {
    const { coordinator, triggered } = harness();
    await expect(coordinator.triggerSavepoint(undefined)).rejects.toThrow(
      /no target folder was given and state\.savepoints\.dir is unset/,
    );
    expect(triggered).toEqual([]);
  });

  it("tells every task that a stop-with-savepoint's savepoint completed, and starts nothing else while it is pending", async () => {
    const savepoints = path.join(base, "savepoints");
    const { coordinator, triggered, triggerOptions, acknowledgeSavepoint, notified } = harness({
      maxConcurrentCheckpoints: 10,
    });
    const stop = coordinator.triggerSavepoint(savepoints, SnapshotType.SAVEPOINT_SUSPEND);
    await eventually("the source got the trigger", () => triggered.length === 1);
    expect(triggerOptions[0]?.snapshotType).toBe(SnapshotType.SAVEPOINT_SUSPEND);
    await expect(coordinator.triggerCheckpoint()).rejects.toThrow(
      /a stop-with-savepoint is in progress/,
    );
    await expect(coordinator.triggerSavepoint(savepoints)).rejects.toThrow(
      /a stop-with-savepoint is in progress/,
    );
    await acknowledgeSavepoint(0, 1n);
    await acknowledgeSavepoint(1, 1n);
    await stop;
    await eventually("both tasks told", () => notified.every((n) => n.length === 1));
    expect(notified).toEqual([["complete 1"], ["complete 1"]]);
  });

  it("refuses a stop-with-savepoint when checkpoints do not go on after tasks finish", async () => {
    const { coordinator } = harness({ checkpointsAfterTasksFinish: false });
    await expect(
      coordinator.triggerSavepoint(path.join(base, "s"), SnapshotType.SAVEPOINT_TERMINATE),
    ).rejects.toThrow(/needs execution\.checkpointing\.checkpoints-after-tasks-finish/);
  });
});
