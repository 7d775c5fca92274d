/**
 * Keyed state at the JobGraph level: a word count whose counters keep their counts in a
 * `KeyedStateBackend` and checkpoint its snapshot, on a local cluster, failed on purpose after
 * checkpoints completed. The restarted counters restore their key groups and the counts are
 * exact; every snapshot holds only the key groups of the subtask that took it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { StringSerializer } from "@sluice/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobExecution } from "../jobmaster/job-execution.js";
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
import { KeyedStateBackend } from "./keyed-state-backend.js";
import type { KeyedStateSnapshot } from "./keyed-state-snapshot.js";
import { ValueStateDescriptor } from "./state-descriptor.js";

const cluster = new LocalCluster();
let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "sluice-keyed-state-task-"));
});
afterEach(async () => {
  await cluster.close();
  await rm(base, { recursive: true, force: true });
});

const WORDS = 20_000;
const COUNT = new ValueStateDescriptor<number>("count");
let execution: JobExecution | undefined;
const snapshots: KeyedStateSnapshot[] = [];

/** Emits words 0..WORDS-1 (state: its offset), pausing a millisecond every 100 words. */
function source(task: Task): Promise<number> {
  return emitFromOffset(
    task,
    (offset) => offset < WORDS,
    (offset) => wordOf(offset, task.subtaskIndex),
    (offset) =>
      offset % 100 === 0
        ? task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1)))
        : undefined,
  );
}

/**
 * Counts each word in keyed state and returns the counts of its keys; subtask 0's first attempt
 * fails once two checkpoints completed and it counted 5,000 words.
 */
async function count(task: Task): Promise<Record<string, number>> {
  const backend = KeyedStateBackend.forTask(task, { keySerializer: StringSerializer.INSTANCE });
  backend.restore((task.restoredState as { keyed?: KeyedStateSnapshot } | undefined)?.keyed);
  task.setCheckpointHandler({
    snapshotState: () => {
      const keyed = backend.snapshot();
      snapshots.push(keyed);
      return { keyed };
    },
  });
  const counts = backend.getState(COUNT);
  const completedAtStart = execution?.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0;
  let processed = 0;
  for await (const word of task.reader<string>()) {
    backend.setCurrentKey(word);
    counts.update((counts.value() ?? 0) + 1);
    processed++;
    const completed = execution?.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0;
    if (
      task.attemptNumber === 0 &&
      task.subtaskIndex === 0 &&
      processed >= 5_000 &&
      completed >= completedAtStart + 2
    ) {
      throw new Error(`${task.name}: injected failure`);
    }
  }
  const result: Record<string, number> = {};
  for (const word of backend.getKeys("count")) {
    backend.setCurrentKey(word);
    result[word] = counts.value() ?? 0;
  }
  return result;
}

describe("keyed state in a JobGraph task", () => {
  it("is restored by key group after a failure, and every word is counted exactly once", async () => {
    const config = checkpointingConfiguration(path.join(base, "checkpoints"), 3);
    const executor = await cluster.startExecutor(config, { invokables: { source, count } });
    const deployer = await cluster.startDeployer(config);
    execution = await deployer.deploy(wordCountGraph("keyed state", {}), () => executor);
    const result = await execution.terminated;
    expect(result.status, String(result.error?.stack)).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect(result.checkpoints.restoredFrom).toBeDefined();
    const total = new Map<string, number>();
    for (const partial of result.results.get("Count") ?? []) {
      for (const [word, n] of Object.entries(partial as Record<string, number>)) {
        expect(total.has(word), `${word} counted by two subtasks`).toBe(false);
        total.set(word, n);
      }
    }
    expect(total).toEqual(expectedCounts(WORDS, 2));
    for (const snapshot of snapshots) {
      for (const group of snapshot.keyGroups) {
        expect(group.keyGroup).toBeGreaterThanOrEqual(snapshot.keyGroupRange.start);
        expect(group.keyGroup).toBeLessThanOrEqual(snapshot.keyGroupRange.end);
      }
    }
  }, 60_000);
});
