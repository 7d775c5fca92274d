import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PollStatus } from "../io/record-reader.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import { assignKeyToParallelOperator } from "../partitioner/key-group-range-assignment.js";
import type { Task } from "../taskexecutor/task.js";
import { LocalCluster, localConfiguration } from "../taskexecutor/test-support/local-cluster.js";
import type { TaskInvokable } from "../taskexecutor/user-code-registry.js";
import { JobGraph } from "./job-graph.js";

// Source (2) → HASH → Forward (2) → Count (1), every channel local, with unaligned checkpoints
// and an alignment timeout. Forward 2 declines every checkpoint; its channel to Count is long
// (it pads its output with filler records that Count reads slowly). Checkpoint 1 is declined
// and aborted while Forward 1's aligned barrier 1 still waits for Count, so checkpoint 2 starts.
// Source 2 holds its trigger, so Forward 1's alignment of checkpoint 2 times out and it sends
// barrier 2 on as a priority event, into its subpartition that Count blocked when it took
// barrier 1 (Count still waits for checkpoint 1 on Forward 2's long channel). A priority
// notification from that blocked subpartition made Count's gate serve Forward 1's channel first,
// find nothing, and hand Forward 2's data to Count's poll for priority events, which failed the
// task with "announced a priority event but handed out data".

/** The alignment timeout: longer than Count takes for one buffer of fillers (≈ 600 ms). */
const ALIGNMENT_TIMEOUT_MS = 1_500;
const MAX_PARALLELISM = 128;
/** Words each source emits, all routed to Forward 2 (Forward 1's channel carries no data). */
const WORDS_PER_SOURCE = 100;
/** Filler records Forward 2 adds per word: its channel to Count holds about four buffers. */
const FILLERS_PER_WORD = 10;
const FILLER = "";

/** The words every source emits: `w<n>`, the first that key-group-hash to Forward subtask 1. */
const WORDS: readonly string[] = (() => {
  const words: string[] = [];
  for (let n = 0; words.length < WORDS_PER_SOURCE; n++) {
    const word = `w${n}`;
    if (assignKeyToParallelOperator(word, MAX_PARALLELISM, 2) === 1) words.push(word);
  }
  return words;
})();

/** What the tasks tell each other (they run in this process). */
interface Knobs {
  /** Resolves once Source 1 took its snapshot of checkpoint 2: Count may start reading. */
  countMayRead: Promise<void>;
  releaseCount: () => void;
  /** Source 2 runs no mail (so sends no barrier) until then (ms since the epoch). */
  source2HeldUntil: number;
  /** The sources return once this has passed. */
  sourcesEndAt: number;
}

let knobs: Knobs;

function newKnobs(): Knobs {
  let releaseCount = () => {};
  const countMayRead = new Promise<void>((resolve) => {
    releaseCount = resolve;
  });
  return { countMayRead, releaseCount, source2HeldUntil: 0, sourcesEndAt: 0 };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function source(task: Task): Promise<number> {
  let snapshots = 0;
  task.setCheckpointHandler({
    snapshotState: () => {
      snapshots++;
      if (task.subtaskIndex === 1 && snapshots === 1) {
        knobs.source2HeldUntil = Date.now() + ALIGNMENT_TIMEOUT_MS + 2_000;
      }
      if (task.subtaskIndex === 0 && snapshots === 2) {
        // Barrier 2 goes out right after this returns; Forward 1 takes it at once.
        void sleep(20).then(knobs.releaseCount);
      }
      return { snapshots };
    },
  });
  const writer = task.writer<string>();
  for (const word of WORDS) writer.emit(word);
  writer.flushAll();
  while (Date.now() < knobs.sourcesEndAt) {
    if (Date.now() < knobs.source2HeldUntil && task.subtaskIndex === 1) await sleep(5);
    else await task.yieldToMailbox(sleep(5));
  }
  return WORDS.length;
}

/**
 * Forwards every record; subtask 1 declines every checkpoint until its input ended (its final
 * checkpoint must complete for the job to end) and pads its output.
 */
async function forward(task: Task): Promise<number> {
  let forwarded = 0;
  let ended = false;
  task.setCheckpointHandler({
    snapshotState: () => {
      if (task.subtaskIndex === 1 && !ended) throw new Error("declined on purpose");
      return { forwarded };
    },
  });
  const reader = task.reader<string>();
  const writer = task.writer<string>();
  for (;;) {
    const status = reader.pollRecords((word) => {
      writer.emit(word);
      if (task.subtaskIndex === 1) for (let i = 0; i < FILLERS_PER_WORD; i++) writer.emit(FILLER);
      forwarded++;
    }, 16);
    if (status === PollStatus.END_OF_INPUT) {
      ended = true;
      return forwarded;
    }
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Counts words; waits for its cue, then reads one record at a time, a filler per millisecond. */
async function count(task: Task): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  task.setCheckpointHandler({ snapshotState: () => counts });
  const reader = task.reader<string>();
  await knobs.countMayRead;
  for (;;) {
    let filler = false;
    const status = reader.pollRecords((word) => {
      if (word === FILLER) filler = true;
      else counts[word] = (counts[word] ?? 0) + 1;
    }, 1);
    if (status === PollStatus.END_OF_INPUT) return counts;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else if (filler) await sleep(1);
    else await new Promise((resolve) => setImmediate(resolve));
  }
}

const INVOKABLES: Readonly<Record<string, TaskInvokable<Task>>> = { source, forward, count };

const cluster = new LocalCluster();
let checkpointsDir: string;

beforeEach(async () => {
  checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-three-stage-test-"));
  knobs = newKnobs();
});
afterEach(async () => {
  knobs.releaseCount();
  await cluster.close();
  await rm(checkpointsDir, { recursive: true, force: true });
});

describe("a three-stage job with unaligned checkpoints, an alignment timeout and a declined checkpoint", () => {
  it("passes a priority barrier sent into a subpartition blocked by the declined checkpoint's aligned barrier, and counts every word once", async () => {
    const config = localConfiguration({
      "state.checkpoints.dir": checkpointsDir,
      "execution.checkpointing.interval": "100ms",
      "execution.checkpointing.unaligned.enabled": true,
      "execution.checkpointing.aligned-checkpoint-timeout": `${ALIGNMENT_TIMEOUT_MS}ms`,
      "execution.checkpointing.tolerable-failed-checkpoints": 1_000,
      "restart-strategy.type": "none",
    });
    const executor = await cluster.startExecutor(config, { invokables: INVOKABLES });
    const graph = new JobGraph("three stages");
    const sources = graph.addVertex({ name: "Source", parallelism: 2, invokable: "source" });
    const forwards = graph.addVertex({
      name: "Forward",
      parallelism: 2,
      maxParallelism: MAX_PARALLELISM,
      invokable: "forward",
    });
    const counters = graph.addVertex({ name: "Count", parallelism: 1, invokable: "count" });
    graph.connect(sources, forwards, {
      partitioner: { name: "HASH", keySelector: "value" },
      serializer: "string",
    });
    graph.connect(forwards, counters, { partitioner: { name: "REBALANCE" }, serializer: "string" });
    knobs.sourcesEndAt = Date.now() + 2 * ALIGNMENT_TIMEOUT_MS + 3_000;
    const deployer = await cluster.startDeployer(config);
    const execution = await deployer.deploy(graph, () => executor);
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    const [counted] = (result.results.get("Count") ?? []) as Record<string, number>[];
    expect(counted).toEqual(Object.fromEntries(WORDS.map((word) => [word, 2])));
    expect(result.checkpoints.aborted).toBeGreaterThanOrEqual(2);
    expect(execution.checkpointCoordinator?.lastCheckpointFailure?.reason).toBe(
      CheckpointFailureReason.CHECKPOINT_DECLINED,
    );
  }, 60_000);
});
