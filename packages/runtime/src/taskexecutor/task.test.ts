import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, type JobID } from "@sluice/core";
import { must } from "@sluice/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsCheckpointStorage } from "../checkpointing/fs-checkpoint-storage.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import type { Task } from "./task.js";
import type { TaskExecutor } from "./task-executor.js";
import { LocalCluster, localConfiguration } from "./test-support/local-cluster.js";
import {
  countWords,
  recordingJobMaster,
  wordCountDescriptors,
} from "./test-support/task-harness.js";
import { expectedCounts, wordOf } from "./test-support/word-count.js";

const cluster = new LocalCluster();
let checkpointsDir: string;
beforeEach(async () => {
  checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-task-test-"));
});
afterEach(async () => {
  await cluster.close();
  await rm(checkpointsDir, { recursive: true, force: true });
});

/** The descriptors of the word count job, as a checkpointing job in `mode` would get them. */
const descriptors = (executor: TaskExecutor, mode = "EXACTLY_ONCE") =>
  wordCountDescriptors(cluster, executor, mode);
const count = countWords;

/**
 * Emits `words` words and runs its mail exactly when it reached `mailAt`. With `hold`, it pauses
 * at `hold.offset` until `hold.until()` is true.
 */
function sourceWithMailAt(
  words: number,
  mailAt: number,
  hold?: { offset: number; until: () => boolean },
) {
  return async (task: Task): Promise<number> => {
    let offset = 0;
    task.setCheckpointHandler({ snapshotState: () => ({ offset }) });
    const writer = task.writer<string>();
    while (offset < words) {
      while (!writer.isAvailable()) await writer.getAvailableFuture();
      if (offset === mailAt) task.processMail();
      while (offset === hold?.offset && !hold.until()) {
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      if (offset % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
      writer.emit(wordOf(offset, task.subtaskIndex));
      offset++;
    }
    return offset;
  };
}

describe("a checkpointing Task", () => {
  it("aligns its inputs: the snapshot holds exactly the records before each source's barrier", async () => {
    const executor = await cluster.startExecutor(
      localConfiguration({ "state.checkpoints.dir": checkpointsDir }),
    );
    const json = await descriptors(executor);
    const { jobMaster, acks, declines } = recordingJobMaster();
    const [s0, s1, c0, c1] = await Promise.all(json.map((d) => executor.deployTask(d, jobMaster)));
    const tasks = [s0, s1, c0, c1] as Task[];
    // Source 1 goes past word 1000 only once both counters hold source 0's barrier, so each
    // counter processes source 1's words 1000..1499 during its alignment, whatever the
    // scheduling.
    const aligning = () =>
      [c0, c1].every((c) => (c as Task).checkpointBarrierHandler?.isCheckpointPending());
    const running = [
      s0?.run(sourceWithMailAt(3_000, 1_000)),
      s1?.run(sourceWithMailAt(3_000, 1_500, { offset: 1_000, until: aligning })),
      c0?.run(count),
      c1?.run(count),
    ];
    const timestamp = BigInt(Date.now());
    await executor.triggerCheckpoint(tasks[0]?.executionAttemptId as never, 1n, timestamp);
    await executor.triggerCheckpoint(tasks[1]?.executionAttemptId as never, 1n, timestamp);
    await Promise.all(running);
    expect(declines).toEqual([]);
    expect(acks.map((ack) => ack.checkpointId)).toEqual([1n, 1n, 1n, 1n]);
    const stateOf = async (task: Task) => {
      const ack = acks.find((a) => a.executionAttemptId.equals(task.executionAttemptId));
      return (await FsCheckpointStorage.readTaskState(must(ack?.stateHandle), {
        jobId: ack?.jobId as JobID,
        checkpointId: 1n,
        taskName: task.name,
      })) as Record<string, unknown>;
    };
    expect(await stateOf(tasks[0] as Task)).toEqual({ offset: 1_000 });
    expect(await stateOf(tasks[1] as Task)).toEqual({ offset: 1_500 });
    // The counters saw words 0..999 of source 0 and 0..1499 of source 1, and nothing after.
    const snapshot = new Map<string, number>();
    for (const task of [tasks[2], tasks[3]] as Task[]) {
      for (const [word, n] of Object.entries(await stateOf(task))) snapshot.set(word, n as number);
    }
    const expected = expectedCounts(1_000, 1);
    for (let i = 0; i < 1_500; i++) {
      const word = wordOf(i, 1);
      expected.set(word, (expected.get(word) ?? 0) + 1);
    }
    expect(snapshot).toEqual(expected);
    // Each counter held its first channel while the other delivered 500 more records: Flink's
    // alignment figures, reported with the acknowledgement and readable on the task.
    for (const task of [tasks[2], tasks[3]] as Task[]) {
      expect(task.lastCheckpoint?.checkpointId).toBe(1n);
      expect(task.lastCheckpoint?.metrics.alignmentDurationNanos).toBeGreaterThan(0);
      expect(task.lastCheckpoint?.metrics.bytesProcessedDuringAlignment).toBeGreaterThan(0);
      expect(task.checkpointBarrierHandler?.getAlignmentDurationNanos()).toBe(
        task.lastCheckpoint?.metrics.alignmentDurationNanos,
      );
    }
  });

  it("gives a trigger still queued when the source's code returns its barrier before the end", async () => {
    const executor = await cluster.startExecutor(
      localConfiguration({ "state.checkpoints.dir": checkpointsDir }),
    );
    const json = await descriptors(executor, "AT_LEAST_ONCE");
    const { jobMaster, acks } = recordingJobMaster();
    const tasks = await Promise.all(json.map((d) => executor.deployTask(d, jobMaster)));
    let release!: () => void;
    const triggered = new Promise<void>((resolve) => {
      release = resolve;
    });
    const source = async (task: Task) => {
      task.setCheckpointHandler({ snapshotState: () => ({ offset: 10 }) });
      for (let i = 0; i < 10; i++) task.writer<string>().emit(wordOf(i, task.subtaskIndex));
      await triggered;
    };
    const running = [
      tasks[0]?.run(source),
      tasks[1]?.run(source),
      tasks[2]?.run(count),
      tasks[3]?.run(count),
    ];
    for (const task of tasks.slice(0, 2)) {
      await executor.triggerCheckpoint(task.executionAttemptId, 4n, BigInt(Date.now()));
    }
    release();
    await Promise.all(running);
    expect(acks.map((ack) => ack.checkpointId)).toEqual([4n, 4n, 4n, 4n]);
  });

  it("refuses triggers for a task with inputs or of a job without checkpoints, and declines when not running", async () => {
    const executor = await cluster.startExecutor(
      localConfiguration({ "state.checkpoints.dir": checkpointsDir }),
    );
    const json = await descriptors(executor);
    const { jobMaster, declines } = recordingJobMaster();
    const counter = await executor.deployTask(json[2], jobMaster);
    await expect(
      executor.triggerCheckpoint(counter.executionAttemptId, 1n, 0n),
    ).rejects.toMatchObject({
      code: ErrorCodes.ILLEGAL_STATE,
      message: expect.stringContaining("only sources are triggered"),
    });
    const source = await executor.deployTask(json[0], jobMaster);
    await executor.triggerCheckpoint(source.executionAttemptId, 2n, 0n);
    expect(declines).toMatchObject([
      { checkpointId: 2n, reason: "CHECKPOINT_DECLINED_TASK_NOT_READY" },
    ]);
    const { checkpointingMode: _, ...plain } = json[1] as Record<string, unknown>;
    const unchecked = await executor.deployTask(plain, jobMaster);
    expect(() => unchecked.triggerCheckpoint(3n, 0n)).toThrow(/takes no checkpoints/);
    for (const task of [counter, source, unchecked]) task.cancel();
    await Promise.all([counter, source, unchecked].map((task) => task.terminated));
  });

  it("is not deployed when its job master cannot take acknowledgements, its mode is unknown, or its snapshot is missing", async () => {
    const executor = await cluster.startExecutor(
      localConfiguration({ "state.checkpoints.dir": checkpointsDir }),
    );
    const json = await descriptors(executor);
    const deaf: JobMasterGateway = {
      updateTaskExecutionState: () => {},
      requestPartitionProducerState: async () => "RUNNING",
    };
    await expect(executor.deployTask(json[0], deaf)).rejects.toMatchObject({
      code: ErrorCodes.TASK_DEPLOYMENT,
      message: expect.stringContaining("does not forward acknowledgeCheckpoint"),
    });
    await expect(
      executor.deployTask({ ...json[0], checkpointingMode: "SOMETIMES" }),
    ).rejects.toMatchObject({
      code: ErrorCodes.DESCRIPTOR,
      message: expect.stringContaining('"checkpointingMode" must be one of EXACTLY_ONCE'),
    });
    const missing = path.join(checkpointsDir, "gone.json");
    const restored = {
      ...json[2],
      taskRestore: { checkpointId: "7", stateHandle: { path: missing, size: 10 } },
    };
    await expect(
      executor.deployTask(restored, recordingJobMaster().jobMaster),
    ).rejects.toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringContaining(missing),
    });
    expect(executor.runningTasks).toEqual([]);
  });
});
