/**
 * Checkpoint aborts and notifications at running tasks (Flink's StreamTask
 * `notifyCheckpointAbortAsync` / `notifyCheckpointSubsumedAsync` with its
 * SubtaskCheckpointCoordinator): real tasks on a TaskExecutor, `Source` (2) → HASH → `Count`
 * (2) over local channels, the job side played by the test.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import type { JsonValue } from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PollStatus } from "../io/record-reader.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import type { Task } from "./task.js";
import type { TaskExecutor } from "./task-executor.js";
import { LocalCluster, localConfiguration } from "./test-support/local-cluster.js";
import { recordingJobMaster, wordCountDescriptors } from "./test-support/task-harness.js";
import { wordOf } from "./test-support/word-count.js";

const cluster = new LocalCluster();
let checkpointsDir: string;
let released = false;
/** What each task's listener was told, by task name, and the checkpoints each snapshotted. */
const told = new Map<string, string[]>();
const snapshotted = new Map<string, bigint[]>();

beforeEach(async () => {
  checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-task-notifications-test-"));
  released = false;
  told.clear();
  snapshotted.clear();
});
afterEach(async () => {
  released = true;
  await cluster.close();
  await rm(checkpointsDir, { recursive: true, force: true });
});

/** Records the task's snapshots and what its listener is told. */
function observe(task: Task, state: () => JsonValue): void {
  const log = (entry: string): void => {
    told.set(task.name, [...(told.get(task.name) ?? []), entry]);
  };
  task.setCheckpointHandler({
    snapshotState: (id) => {
      snapshotted.set(task.name, [...(snapshotted.get(task.name) ?? []), id]);
      return state();
    },
  });
  task.setCheckpointListener({
    notifyCheckpointComplete: (id) => log(`complete ${id}`),
    notifyCheckpointAborted: (id) => log(`abort ${id}`),
    notifyCheckpointSubsumed: (id) => log(`subsume ${id}`),
  });
}

/** Emits a word each turn of the event loop until the test ends, running its mail between. */
async function source(task: Task): Promise<number> {
  let offset = 0;
  observe(task, () => ({ offset }));
  const writer = task.writer<string>();
  while (!released) {
    await task.yieldToMailbox(writer.isAvailable() ? undefined : writer.getAvailableFuture());
    writer.emit(wordOf(offset++, task.subtaskIndex));
  }
  return offset;
}

async function counter(task: Task): Promise<number> {
  let count = 0;
  observe(task, () => ({ count }));
  const reader = task.reader<string>();
  for (;;) {
    const status = reader.pollRecords(() => count++, 128);
    if (status === PollStatus.END_OF_INPUT) return count;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await new Promise((resolve) => setImmediate(resolve));
  }
}

async function runJob() {
  const executor = await cluster.startExecutor(
    localConfiguration({ "state.checkpoints.dir": checkpointsDir }),
  );
  const descriptors = await wordCountDescriptors(cluster, executor);
  const { jobMaster, acks, declines } = recordingJobMaster();
  const tasks = await Promise.all(descriptors.map((d) => executor.deployTask(d, jobMaster)));
  const [s0, s1, c0, c1] = tasks as [Task, Task, Task, Task];
  for (const [task, code] of [
    [s0, source],
    [s1, source],
    [c0, counter],
    [c1, counter],
  ] as const) {
    task.run(code).catch(() => {});
  }
  const acksOf = (id: bigint) => acks.filter((ack) => ack.checkpointId === id).length;
  return { executor, tasks, sources: [s0, s1], acks, declines, acksOf };
}

async function trigger(executor: TaskExecutor, sources: readonly Task[], id: bigint) {
  for (const task of sources) {
    await executor.triggerCheckpoint(task.executionAttemptId, id, BigInt(Date.now()));
  }
}

describe("checkpoint aborts and notifications at running tasks", () => {
  it("a source told that a checkpoint was aborted before its trigger sends a cancellation marker instead of the barrier: nobody snapshots it, the counters stop aligning at once", async () => {
    const { executor, tasks, sources, declines, acksOf } = await runJob();
    for (const task of sources) {
      await executor.notifyCheckpointAborted(task.executionAttemptId, 7n, 0n);
    }
    await trigger(executor, sources, 7n);
    await waitFor(() => declines.length === 2, {
      what: "both counters declined",
      timeoutMs: 20_000,
    });
    expect(declines.map((d) => [d.checkpointId, d.reason])).toEqual([
      [7n, CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER],
      [7n, CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER],
    ]);
    expect(acksOf(7n)).toBe(0);
    for (const task of tasks) expect(snapshotted.get(task.name) ?? []).not.toContain(7n);
    // The next checkpoint goes through as usual.
    await trigger(executor, sources, 8n);
    await waitFor(() => acksOf(8n) === 4, { what: "4 acks of 8", timeoutMs: 20_000 });
  });

  it("an abort tells the listener of the newest completed checkpoint first; a completion is told once; a subsumed checkpoint follows the completion that subsumed it", async () => {
    const { executor, tasks, sources, acksOf } = await runJob();
    await trigger(executor, sources, 1n);
    await waitFor(() => acksOf(1n) === 4, { what: "4 acks of 1", timeoutMs: 20_000 });
    // The completion of 1 never reached the tasks; the abort of 2 carries it.
    for (const task of tasks) {
      await executor.notifyCheckpointAborted(task.executionAttemptId, 2n, 1n);
    }
    // Its trigger comes after all: the sources skip it.
    await trigger(executor, sources, 2n);
    await trigger(executor, sources, 3n);
    await waitFor(() => acksOf(3n) === 4, { what: "4 acks of 3", timeoutMs: 20_000 });
    for (const task of tasks) {
      await executor.notifyCheckpointComplete(task.executionAttemptId, 3n, 0n, 1n);
      // Late: 3 stands for it.
      await executor.notifyCheckpointComplete(task.executionAttemptId, 1n, 0n);
    }
    await waitFor(() => tasks.every((task) => (told.get(task.name) ?? []).length === 4), {
      what: "every listener was told four times",
      timeoutMs: 20_000,
    });
    for (const task of tasks) {
      expect(told.get(task.name)).toEqual(["complete 1", "abort 2", "complete 3", "subsume 1"]);
      // Aborted before any task took it: no snapshot anywhere.
      expect(snapshotted.get(task.name)).toEqual([1n, 3n]);
    }
  });
});
