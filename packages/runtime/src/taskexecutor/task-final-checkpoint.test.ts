/**
 * FLIP-147's final checkpoint at the task (Flink's StreamTaskFinalCheckpointsTest): real tasks on
 * a TaskExecutor, `Source` (2) → HASH → `Count` (2) over local channels, with the job side
 * played by the test, which triggers the sources and tells the tasks which checkpoints
 * completed. A task whose code returned sends EndOfData and stays RUNNING, reading its inputs for
 * barriers, until a checkpoint it took after that completed.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { JobID } from "@sluice/core";
import { must, waitFor } from "@sluice/core/testing";
import type { JsonObject } from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsCheckpointStorage } from "../checkpointing/fs-checkpoint-storage.js";
import { PollStatus } from "../io/record-reader.js";
import type { AcknowledgeCheckpoint } from "../messages/acknowledge-checkpoint.js";
import type { Task } from "./task.js";
import type { TaskExecutor } from "./task-executor.js";
import { LocalCluster, localConfiguration } from "./test-support/local-cluster.js";
import { recordingJobMaster, wordCountDescriptors } from "./test-support/task-harness.js";
import { expectedCounts, wordOf } from "./test-support/word-count.js";

const WORDS = 500;
const cluster = new LocalCluster();
let checkpointsDir: string;
beforeEach(async () => {
  checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-final-checkpoint-test-"));
});
afterEach(async () => {
  await cluster.close();
  await rm(checkpointsDir, { recursive: true, force: true });
});

/** What the test's tasks did, by task name. */
interface Observed {
  /** Tasks whose code returned. */
  readonly returned: Set<string>;
  /** Checkpoints each task snapshotted after its code returned. */
  readonly snapshotsAfterReturn: Map<string, bigint[]>;
  /** Per counter: whether its input had delivered EndOfPartition when its code returned. */
  readonly endOfPartitionAtReturn: Map<string, boolean>;
}

/** A source emitting WORDS words (state: its offset) that runs its mail between them. */
function source(observed: Observed) {
  return async (task: Task): Promise<number> => {
    let offset = 0;
    trackSnapshots(task, observed, () => ({ offset }));
    const writer = task.writer<string>();
    while (offset < WORDS) {
      if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
      else if (offset % 100 === 0) await task.yieldToMailbox();
      writer.emit(wordOf(offset, task.subtaskIndex));
      offset++;
    }
    observed.returned.add(task.name);
    return offset;
  };
}

/** Counts until END_OF_INPUT (state: its map). */
function counter(observed: Observed) {
  return async (task: Task): Promise<Record<string, number>> => {
    const counts: Record<string, number> = {};
    trackSnapshots(task, observed, () => counts);
    const reader = task.reader<string>();
    for (;;) {
      const status = reader.pollRecords((word) => {
        counts[word] = (counts[word] ?? 0) + 1;
      }, 128);
      if (status === PollStatus.END_OF_INPUT) break;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      else await new Promise((resolve) => setImmediate(resolve));
    }
    observed.endOfPartitionAtReturn.set(task.name, reader.isFinished());
    observed.returned.add(task.name);
    return counts;
  };
}

function trackSnapshots(task: Task, observed: Observed, state: () => JsonObject): void {
  task.setCheckpointHandler({
    snapshotState: (checkpointId) => {
      if (observed.returned.has(task.name)) {
        const list = observed.snapshotsAfterReturn.get(task.name) ?? [];
        list.push(checkpointId);
        observed.snapshotsAfterReturn.set(task.name, list);
      }
      return state();
    },
  });
}

/** Deploys and runs the four tasks; `extra` goes into every descriptor. */
async function runJob(extra: Record<string, unknown>, checkpointing = true) {
  const executor = await cluster.startExecutor(
    localConfiguration({ "state.checkpoints.dir": checkpointsDir }),
  );
  const json = await wordCountDescriptors(cluster, executor, "EXACTLY_ONCE", extra);
  const descriptors = checkpointing
    ? json
    : json.map(({ checkpointingMode: _, ...plain }) => plain as Record<string, unknown>);
  const { jobMaster, acks, declines } = recordingJobMaster();
  const tasks = await Promise.all(descriptors.map((d) => executor.deployTask(d, jobMaster)));
  const observed: Observed = {
    returned: new Set(),
    snapshotsAfterReturn: new Map(),
    endOfPartitionAtReturn: new Map(),
  };
  const [s0, s1, c0, c1] = tasks as [Task, Task, Task, Task];
  const results = [
    s0.run(source(observed)),
    s1.run(source(observed)),
    c0.run(counter(observed)),
    c1.run(counter(observed)),
  ];
  return { executor, tasks, sources: [s0, s1], acks, declines, observed, results };
}

const FINAL = { checkpointsAfterTasksFinish: true };

const acksOf = (acks: readonly AcknowledgeCheckpoint[], id: bigint) =>
  acks.filter((ack) => ack.checkpointId === id).length;

async function trigger(executor: TaskExecutor, sources: readonly Task[], id: bigint) {
  for (const task of sources) {
    await executor.triggerCheckpoint(task.executionAttemptId, id, BigInt(Date.now()));
  }
}

async function notifyAll(executor: TaskExecutor, tasks: readonly Task[], id: bigint, ok: boolean) {
  for (const task of tasks) {
    if (ok) await executor.notifyCheckpointComplete(task.executionAttemptId, id, 0n);
    else await executor.notifyCheckpointAborted(task.executionAttemptId, id, 0n);
  }
}

describe("a task's final checkpoint (StreamTaskFinalCheckpointsTest)", () => {
  it("testWaitingForFinalCheckpoint: a task whose code returned stays RUNNING until a checkpoint it took after that completed", async () => {
    const { executor, tasks, sources, acks, declines, observed, results } = await runJob(FINAL);
    await waitFor(() => observed.returned.size === 4, {
      what: "every task's code returned",
      timeoutMs: 20_000,
    });
    // EndOfData ended the counters' input, ahead of EndOfPartition: sources and counters alike
    // wait, nothing finished, no EndOfPartition was sent.
    expect([...observed.endOfPartitionAtReturn.values()]).toEqual([false, false]);
    expect(tasks.map((task) => task.state)).toEqual(["RUNNING", "RUNNING", "RUNNING", "RUNNING"]);
    expect(tasks.every((task) => task.partitions.every((p) => !p.isFinished()))).toBe(true);

    // The final checkpoint, triggered at the sources only: its barriers follow their EndOfData to
    // the counters, which take part in it although their code returned.
    await trigger(executor, sources, 6n);
    await waitFor(() => acksOf(acks, 6n) === 4, {
      what: "4 acks of checkpoint 6",
      timeoutMs: 20_000,
    });
    expect(declines).toEqual([]);
    for (const task of tasks) expect(observed.snapshotsAfterReturn.get(task.name)).toEqual([6n]);
    // Acknowledged is not completed: still waiting.
    expect(tasks.map((task) => task.state)).toEqual(["RUNNING", "RUNNING", "RUNNING", "RUNNING"]);

    await notifyAll(executor, tasks, 6n, true);
    const ended = await Promise.all(tasks.map((task) => task.terminated));
    expect(ended.map((update) => update.state)).toEqual([
      "FINISHED",
      "FINISHED",
      "FINISHED",
      "FINISHED",
    ]);
    const [, , c0, c1] = await Promise.all(results);
    // The counters' final snapshot holds every word: the end of data came before the barrier.
    const snapshot = new Map<string, number>();
    for (const task of tasks.slice(2)) {
      const ack = must(acks.find((a) => a.executionAttemptId.equals(task.executionAttemptId)));
      const state = (await FsCheckpointStorage.readTaskState(must(ack.stateHandle), {
        jobId: ack.jobId as JobID,
        checkpointId: 6n,
        taskName: task.name,
      })) as Record<string, number>;
      for (const [word, n] of Object.entries(state)) snapshot.set(word, n);
    }
    expect(snapshot).toEqual(expectedCounts(WORDS, 2));
    expect({ ...(c0 as object), ...(c1 as object) }).toEqual(Object.fromEntries(snapshot));
  });

  it("testWaitingForFinalCheckpointNotTheFirstNotifiedComplete: aborted checkpoints after the end do not let a task finish; a later completed one does", async () => {
    const { executor, tasks, sources, acks, observed } = await runJob(FINAL);
    await waitFor(() => observed.returned.size === 4, {
      what: "every task's code returned",
      timeoutMs: 20_000,
    });
    for (const id of [1n, 2n, 3n]) {
      await trigger(executor, sources, id);
      await waitFor(() => acksOf(acks, id) === 4, { what: `4 acks of ${id}`, timeoutMs: 20_000 });
    }
    // Only the third completes: the first two are aborted.
    await notifyAll(executor, tasks, 1n, false);
    await notifyAll(executor, tasks, 2n, false);
    expect(tasks.map((task) => task.state)).toEqual(["RUNNING", "RUNNING", "RUNNING", "RUNNING"]);
    await notifyAll(executor, tasks, 3n, true);
    const ended = await Promise.all(tasks.map((task) => task.terminated));
    expect(ended.every((update) => update.state === "FINISHED")).toBe(true);
    for (const task of tasks) {
      expect(observed.snapshotsAfterReturn.get(task.name)).toEqual([1n, 2n, 3n]);
    }
  });

  it("testCheckpointDoneOnFinishedOperator: a counter whose producers finished is triggered itself and snapshots its final state", async () => {
    const { executor, tasks, sources, acks, observed } = await runJob(FINAL);
    await waitFor(() => observed.returned.size === 4, {
      what: "every task's code returned",
      timeoutMs: 20_000,
    });
    const counters = tasks.slice(2);
    // The sources complete their final checkpoint; the counters are told too.
    await trigger(executor, sources, 2n);
    await waitFor(() => acksOf(acks, 2n) === 4, { what: "4 acks of 2", timeoutMs: 20_000 });
    await notifyAll(executor, sources, 2n, true);
    await Promise.all(sources.map((task) => task.terminated));
    // With their producers finished, the job side triggers the counters directly (here before
    // they heard of checkpoint 2): the trigger runs as mail while they wait.
    for (const task of counters) {
      await executor.triggerCheckpoint(task.executionAttemptId, 3n, BigInt(Date.now()));
    }
    await waitFor(() => acksOf(acks, 3n) === 2, { what: "2 acks of 3", timeoutMs: 20_000 });
    await notifyAll(executor, counters, 3n, true);
    const ended = await Promise.all(counters.map((task) => task.terminated));
    expect(ended.every((update) => update.state === "FINISHED")).toBe(true);
    for (const task of counters) {
      expect(observed.snapshotsAfterReturn.get(task.name)).toEqual([2n, 3n]);
    }
  });

  it("testNotWaitingForAllRecordsProcessedIfCheckpointNotEnabled: without checkpoints, or without checkpoints after tasks finish, tasks finish when their code returns", async () => {
    for (const [extra, checkpointing] of [
      [{}, true],
      [FINAL, false],
    ] as const) {
      const { tasks, acks, results, observed } = await runJob(extra, checkpointing);
      const ended = await Promise.all(tasks.map((task) => task.terminated));
      expect(ended.every((update) => update.state === "FINISHED")).toBe(true);
      expect(acks).toEqual([]);
      // No EndOfData: the counters' input ended with EndOfPartition, as before FLIP-147.
      expect([...observed.endOfPartitionAtReturn.values()]).toEqual([true, true]);
      const [, , c0, c1] = await Promise.all(results);
      expect(Object.keys({ ...(c0 as object), ...(c1 as object) }).length).toBe(97);
      await cluster.close();
    }
  });
});
