/**
 * FLIP-147 on a FORWARD pipeline, end to end on a local cluster: `Source` (2) → FORWARD →
 * `Count` (2). Source 0 emits a burst and ends at once, while its counter needs more than a
 * second to drain that backlog; source 1 runs on until the test releases it. Checkpoints must
 * keep completing through the drain and after source 0 finished, aligned and unaligned, and no
 * completed checkpoint may record source 0 as finished while its counter misses some of its
 * words: a restore from it would lose them.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Deferred, deferred } from "@sluice/core";
import { must, waitFor } from "@sluice/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsCheckpointStorage } from "../../checkpointing/fs-checkpoint-storage.js";
import { PollStatus } from "../../io/record-reader.js";
import type { Task } from "../../taskexecutor/task.js";
import {
  checkpointingConfiguration,
  LocalCluster,
} from "../../taskexecutor/test-support/local-cluster.js";
import { emitFromOffset } from "../../taskexecutor/test-support/word-count.js";
import type { TaskInvokable } from "../../taskexecutor/user-code-registry.js";
import type { JobExecution } from "../job-execution.js";
import { JobGraph, type JobVertex } from "../job-graph.js";

/** Words source 0 emits in its burst. */
const BURST = 3000;

const cluster = new LocalCluster();
let checkpointsDir: string;

/** What the invokables report and wait for (they run in this process). */
const world = {
  execution: undefined as JobExecution | undefined,
  /** The source vertex, to ask checkpoints whether its subtask 0 finished. */
  source: undefined as JobVertex | undefined,
  /** Set by the test: source 1 may end. */
  releaseSource1: false,
  /** Checkpoints completed when source 0's code first returned. */
  completedAtBurstEnd: undefined as number | undefined,
  /** Checkpoints completed when counter 0 first read the end of its input. */
  completedAtDrainEnd: undefined as number | undefined,
  /** The counts each counter's last attempt that ran reported when its input ended. */
  finalCounts: [] as Record<string, number>[],
  /** Source 1's offset when its last attempt that ran returned. */
  source1Words: 0,
  /**
   * Whether counter 1 fails now, by attempt number (checked between its polls); none by
   * default.
   */
  failCounter1: (_attempt: number) => false,
  /**
   * Set by the test: counter 0, a sink, commits its final checkpoint only once this resolves,
   * so it runs on after source 0 finished.
   */
  finalCommit: undefined as Deferred<void> | undefined,
  /** Set once counter 0 waits in the commit of its final checkpoint. */
  finalCommitHeld: false,
};

beforeEach(async () => {
  checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-forward-flip147-test-"));
  world.execution = undefined;
  world.source = undefined;
  world.releaseSource1 = false;
  world.completedAtBurstEnd = undefined;
  world.completedAtDrainEnd = undefined;
  world.finalCounts = [];
  world.source1Words = 0;
  world.failCounter1 = () => false;
  world.finalCommit = undefined;
  world.finalCommitHeld = false;
});
afterEach(async () => {
  // A test that failed while counter 0 holds its commit must not hold the clean-up too.
  world.finalCommit?.resolve();
  await cluster.close();
  await rm(checkpointsDir, { recursive: true, force: true });
});

const completed = () => world.execution?.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0;

/** Source 0: BURST words `a0`..`a6`, then ends. Source 1: a `b` word a millisecond until released. */
async function source(task: Task): Promise<number> {
  if (task.subtaskIndex === 0) {
    const offset = await emitFromOffset(
      task,
      (i) => i < BURST,
      (i) => `a${i % 7}`,
      (i) => (i % 50 === 0 ? task.yieldToMailbox() : undefined),
    );
    world.completedAtBurstEnd ??= completed();
    return offset;
  }
  const offset = await emitFromOffset(
    task,
    () => !world.releaseSource1,
    (i) => `b${i % 5}`,
    () => task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1))),
  );
  world.source1Words = offset;
  return offset;
}

/** Counts words (state: its map). Counter 0 is slow: two words a millisecond at most. */
async function count(task: Task): Promise<Record<string, number>> {
  const counts: Record<string, number> = { ...(task.restoredState as object | undefined) };
  task.setCheckpointHandler({ snapshotState: () => counts });
  const slow = task.subtaskIndex === 0;
  let ended = false;
  if (slow) {
    task.setCheckpointListener({
      notifyCheckpointComplete: async () => {
        if (!ended || world.finalCommit === undefined) return;
        world.finalCommitHeld = true;
        await world.finalCommit.promise;
      },
    });
  }
  const reader = task.reader<string>();
  for (;;) {
    if (task.subtaskIndex === 1 && world.failCounter1(task.attemptNumber)) {
      throw new Error(`${task.name} broke on purpose`);
    }
    const status = reader.pollRecords(
      (word) => {
        counts[word] = (counts[word] ?? 0) + 1;
      },
      slow ? 2 : 64,
    );
    if (status === PollStatus.END_OF_INPUT) break;
    if (status === PollStatus.NOTHING_AVAILABLE) {
      await Promise.race([
        reader.getAvailableFuture(),
        new Promise((resolve) => setTimeout(resolve, 5)),
      ]);
    } else if (slow) await new Promise((resolve) => setTimeout(resolve, 1));
    else await new Promise((resolve) => setImmediate(resolve));
  }
  if (slow) world.completedAtDrainEnd ??= completed();
  world.finalCounts[task.subtaskIndex] = { ...counts };
  ended = true;
  return counts;
}

const INVOKABLES: Readonly<Record<string, TaskInvokable<Task>>> = { source, count };

function forwardGraph(): JobGraph {
  const graph = new JobGraph("forward burst");
  const sources = graph.addVertex({ name: "Source", parallelism: 2, invokable: "source" });
  const counts = graph.addVertex({ name: "Count", parallelism: 2, invokable: "count" });
  graph.connect(sources, counts, { partitioner: { name: "FORWARD" }, serializer: "string" });
  world.source = sources;
  return graph;
}

/**
 * Checkpoints every 50 ms, none tolerated to fail (a failure fails the job over, which the tests
 * see as a restart), every completed checkpoint kept on disk for the checks at the end.
 */
function configuration(unaligned: boolean, timeout: string, restarts = 0) {
  return checkpointingConfiguration(checkpointsDir, restarts, {
    "execution.checkpointing.unaligned.enabled": unaligned,
    "execution.checkpointing.timeout": timeout,
    "execution.checkpointing.tolerable-failed-checkpoints": 0,
    "state.checkpoints.num-retained": 10_000,
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    // Every task restores, counter 0 with its backlog in flight: a region failover would
    // restart only the failed counter's pipeline.
    "jobmanager.execution.failover-strategy": "full",
  });
}

async function start(unaligned: boolean, timeout: string, restarts = 0): Promise<JobExecution> {
  const config = configuration(unaligned, timeout, restarts);
  const executor = await cluster.startExecutor(config, { invokables: INVOKABLES });
  const deployer = await cluster.startDeployer(config);
  const execution = await deployer.deploy(forwardGraph(), () => executor);
  world.execution = execution;
  return execution;
}

const source0Finished = (execution: JobExecution) =>
  execution.executionVertices.find((v) => v.vertex === world.source && v.subtaskIndex === 0)
    ?.state === "FINISHED";

/** Waits until `more` checkpoints completed after now. */
async function moreCheckpoints(more: number): Promise<void> {
  const target = completed() + more;
  await waitFor(() => completed() >= target, {
    what: `${more} more completed checkpoints`,
    timeoutMs: 20_000,
  });
}

/**
 * Every word counted exactly once: source 0's burst by counter 0, source 1's words by counter 1;
 * and every retained checkpoint that records source 0 as finished holds its whole burst in
 * counter 0's state (or records counter 0 finished too).
 */
async function checkExactlyOnce(execution: JobExecution): Promise<void> {
  const a: Record<string, number> = {};
  for (let i = 0; i < BURST; i++) a[`a${i % 7}`] = (a[`a${i % 7}`] ?? 0) + 1;
  expect(world.finalCounts[0]).toEqual(a);
  const b: Record<string, number> = {};
  for (let i = 0; i < world.source1Words; i++) b[`b${i % 5}`] = (b[`b${i % 5}`] ?? 0) + 1;
  expect(world.finalCounts[1]).toEqual(b);

  const sourceVertex = must(world.source);
  const countVertex = must(
    execution.executionVertices.find((v) => v.vertex.name === "Count"),
  ).vertex;
  const checkpoints = must(execution.checkpointCoordinator).completedCheckpoints;
  for (const checkpoint of checkpoints) {
    if (!checkpoint.isFinished(sourceVertex.id, 0) || checkpoint.isFinished(countVertex.id, 0)) {
      continue;
    }
    const part = must(checkpoint.stateOf(countVertex.id, 0));
    const state = (await FsCheckpointStorage.readTaskState(must(part.stateHandle), {
      jobId: execution.jobId,
      checkpointId: checkpoint.checkpointId,
      taskName: `Count (1/2)#${part.executionAttemptId.attemptNumber}`,
    })) as Record<string, number>;
    const burst = Object.entries(state)
      .filter(([word]) => word.startsWith("a"))
      .reduce((sum, [, n]) => sum + n, 0);
    expect(
      burst,
      `source 0's words in counter 0's state of checkpoint ${checkpoint.checkpointId}`,
    ).toBe(BURST);
  }
}

describe("checkpoints of a FORWARD pipeline whose producer subtasks finish at different times", () => {
  it("keeps completing unaligned checkpoints while a consumer drains its finished producer's backlog, and after", async () => {
    const execution = await start(true, "500ms");
    await waitFor(() => world.completedAtDrainEnd !== undefined, {
      what: "counter 0 drained source 0's burst",
      timeoutMs: 20_000,
    });
    // Its barriers overtook the backlog: checkpoints completed while counter 0 drained it.
    const duringDrain = must(world.completedAtDrainEnd) - must(world.completedAtBurstEnd);
    expect(duringDrain, "checkpoints completed during the drain").toBeGreaterThanOrEqual(3);
    await waitFor(() => source0Finished(execution), {
      what: "source 0 finished",
      timeoutMs: 20_000,
    });
    await moreCheckpoints(3);
    world.releaseSource1 = true;
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    // None expired or failed: with no failure tolerated, one would have failed the job over.
    expect(result.restarts).toBe(0);
    await checkExactlyOnce(execution);
  });

  it("keeps completing aligned checkpoints after a producer subtask finished while its consumer drained a backlog and runs on", async () => {
    const commit = deferred();
    world.finalCommit = commit;
    const execution = await start(false, "10s");
    await waitFor(() => source0Finished(execution) && world.finalCommitHeld, {
      what: "source 0 finished and counter 0 commits its final checkpoint",
      timeoutMs: 20_000,
    });
    // Source 0's final checkpoint followed its backlog: counter 0 read it all first. Counter 0
    // still runs while its producer finished: it is triggered itself.
    expect(world.completedAtDrainEnd).toBeDefined();
    await moreCheckpoints(3);
    commit.resolve();
    world.releaseSource1 = true;
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBe(0);
    await checkExactlyOnce(execution);
  });

  it("restores exactly once from a checkpoint taken during the drain and from one that records the producer finished", async () => {
    world.failCounter1 = (attempt) => {
      const latest = world.execution?.checkpointCoordinator?.latestCompletedCheckpoint;
      if (latest === undefined) return false;
      const finished = latest.isFinished(must(world.source).id, 0);
      // The first attempt fails in the middle of the drain, restored with its backlog in flight.
      if (attempt === 0) {
        return (
          !finished &&
          world.completedAtDrainEnd === undefined &&
          completed() >= (world.completedAtBurstEnd ?? Number.POSITIVE_INFINITY) + 2
        );
      }
      // The second once a checkpoint recorded source 0 finished: restored without running it.
      return attempt === 1 && finished;
    };
    const execution = await start(true, "500ms", 2);
    await waitFor(
      () =>
        execution.executionVertices.every((v) => v.attemptId.attemptNumber === 2) &&
        world.completedAtDrainEnd !== undefined,
      { what: "the second restart", timeoutMs: 25_000 },
    );
    await moreCheckpoints(2);
    world.releaseSource1 = true;
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBe(2);
    await checkExactlyOnce(execution);
  });
});
