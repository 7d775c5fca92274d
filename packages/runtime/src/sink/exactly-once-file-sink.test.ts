/**
 * The transactional file sink in a running job on a local cluster: a word count whose counters
 * write, at each checkpoint, the words counted since the previous one to the sink, with a
 * checkpoint that one counter declines after the other one pre-committed its part (the job then
 * fails over, as `tolerable-failed-checkpoints: 0` says). The committed part files must hold each
 * word's count exactly once: a sink that committed at snapshot time instead of on completion
 * would have made the declined checkpoint's records visible, and the restart would write them
 * again.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PollStatus } from "../io/record-reader.js";
import type { Task } from "../taskexecutor/task.js";
import {
  checkpointingConfiguration,
  LocalCluster,
} from "../taskexecutor/test-support/local-cluster.js";
import {
  emitFromOffset,
  expectedCounts,
  wordCountGraph,
  wordOf,
} from "../taskexecutor/test-support/word-count.js";
import type { TaskInvokable } from "../taskexecutor/user-code-registry.js";
import { TransactionalFileSink } from "./transactional-file-sink.js";

const cluster = new LocalCluster();
let base: string;

beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "sluice-sink-job-test-"));
});
afterEach(async () => {
  await cluster.close();
  await rm(base, { recursive: true, force: true });
});

/** Emits words 0..words-1 (state: its offset), pausing a millisecond every 200 words. */
async function source(task: Task): Promise<number> {
  const words = task.configuration.words as number;
  return emitFromOffset(
    task,
    (offset) => offset < words,
    (offset) => wordOf(offset, task.subtaskIndex),
    (offset) =>
      offset % 200 === 0
        ? task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1)))
        : undefined,
  );
}

/**
 * Counts (state: its map and the sink's part) and writes `word<TAB>increase` lines to the sink
 * at each checkpoint. Subtask 1's first attempt declines its `declineSnapshot`-th checkpoint.
 */
async function sinkingCount(task: Task): Promise<number> {
  const { directory, declineSnapshot } = task.configuration as {
    directory: string;
    declineSnapshot: number;
  };
  const restored = task.restoredState as
    | { counts: Record<string, number>; sink: never }
    | undefined;
  const counts: Record<string, number> = { ...restored?.counts };
  const increases = new Map<string, number>();
  const sink = new TransactionalFileSink({
    directory,
    partPrefix: `part-${task.subtaskIndex}`,
    attemptNumber: task.attemptNumber,
    taskName: task.name,
  });
  await sink.initializeState(restored?.sink);
  const declining = task.subtaskIndex === 1 && task.attemptNumber === 0;
  let snapshots = 0;
  task.setCheckpointHandler({
    snapshotState: (checkpointId) => {
      if (declining && ++snapshots === declineSnapshot) throw new Error("declined on purpose");
      for (const [word, n] of increases) sink.write(`${word}\t${n}\n`);
      increases.clear();
      return { counts, sink: sink.snapshotState(checkpointId) };
    },
    persistSnapshot: (checkpointId) => sink.persistSnapshot(checkpointId),
  });
  task.setCheckpointListener(sink);
  const reader = task.reader<string>();
  try {
    for (;;) {
      const status = reader.pollRecords((word) => {
        counts[word] = (counts[word] ?? 0) + 1;
        increases.set(word, (increases.get(word) ?? 0) + 1);
      }, 128);
      if (status === PollStatus.END_OF_INPUT) return sink.stats.abortedTransactions;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      else await new Promise((resolve) => setImmediate(resolve));
    }
  } catch (error) {
    await sink.close();
    throw error;
  }
}

const INVOKABLES: Readonly<Record<string, TaskInvokable<Task>>> = {
  source,
  count: sinkingCount,
};

/** Sums the `word<TAB>n` lines of the committed part files; lists the hidden files left. */
async function committedCounts(directory: string) {
  const total = new Map<string, number>();
  const entries = (await readdir(directory)).sort();
  for (const name of entries.filter((entry) => !entry.startsWith("."))) {
    for (const line of (await readFile(path.join(directory, name), "utf8")).split("\n")) {
      if (line === "") continue;
      const [word, n] = line.split("\t") as [string, string];
      total.set(word, (total.get(word) ?? 0) + Number(n));
    }
  }
  return { total, hidden: entries.filter((entry) => entry.startsWith(".")) };
}

describe("an exactly-once file sink in a job", () => {
  it("commits each word's count exactly once across a failover after one counter declined a checkpoint the other pre-committed", async () => {
    const directory = path.join(base, "out");
    const config = checkpointingConfiguration(path.join(base, "checkpoints"), 2, {
      "execution.checkpointing.tolerable-failed-checkpoints": 0,
    });
    const executor = await cluster.startExecutor(config, { invokables: INVOKABLES });
    const deployer = await cluster.startDeployer(config);
    const words = 40_000;
    const graph = wordCountGraph("file sink", { words }, { directory, declineSnapshot: 3 });
    const execution = await deployer.deploy(graph, () => executor);
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    // The declined checkpoint failed the job over once.
    expect(result.restarts).toBe(1);
    const { total, hidden } = await committedCounts(directory);
    expect(hidden).toEqual([]);
    expect(total).toEqual(expectedCounts(words, 2));
    // The sink learned its task from the task's code: the job's id and this deployment's
    // (random) leadership epoch are in every name, the restart's attempt 1 in some.
    const names = await readdir(directory);
    const pattern = new RegExp(`^part-[01]-${graph.jobId}-([0-9a-f]{12})-([01])-\\d+$`);
    expect(
      names.every((name) => pattern.test(name)),
      names.join(", "),
    ).toBe(true);
    expect(new Set(names.map((name) => pattern.exec(name)?.[1])).size).toBe(1);
    expect(names.some((name) => pattern.exec(name)?.[2] === "1")).toBe(true);
  });

  it("commits the records no periodic checkpoint covered by the final checkpoint the tasks wait for before they finish", async () => {
    const directory = path.join(base, "out");
    // The first checkpoint comes a second after the start, long after the sources' 2,000 words:
    // only the checkpoint the waiting tasks take after their EndOfData can commit them.
    const config = checkpointingConfiguration(path.join(base, "checkpoints"), 0, {
      "execution.checkpointing.interval": "1s",
    });
    const executor = await cluster.startExecutor(config, { invokables: INVOKABLES });
    const deployer = await cluster.startDeployer(config);
    const words = 2_000;
    const graph = wordCountGraph("final commit", { words }, { directory, declineSnapshot: 0 });
    const execution = await deployer.deploy(graph, () => executor, { leadershipEpoch: "42" });
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.checkpoints.completed).toBeGreaterThanOrEqual(1);
    const { total, hidden } = await committedCounts(directory);
    expect(hidden).toEqual([]);
    expect(total).toEqual(expectedCounts(words, 2));
    // The deployment's leadership epoch reached every task.
    for (const name of await readdir(directory)) {
      expect(name).toMatch(new RegExp(`^part-[01]-${graph.jobId}-42-0-\\d+$`));
    }
  });
});
