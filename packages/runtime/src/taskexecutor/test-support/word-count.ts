import type { JsonObject } from "@sluice/runtime-api";
import { expect } from "vitest";
import { JobGraph } from "../../jobmaster/job-graph.js";
import { addSource } from "../../jobmaster/test-support/source-vertex.js";
import type { Task } from "../task.js";

/** Word `i` of source subtask `subtask`: 97 distinct words, spread over both sources. */
export function wordOf(i: number, subtask: number): string {
  return `w${(i * 31 + subtask) % 97}`;
}

/** How often each word occurs when `subtasks` sources each emit words 0..words-1. */
export function expectedCounts(words: number, subtasks: number): Map<string, number> {
  const expected = new Map<string, number>();
  for (let s = 0; s < subtasks; s++) {
    for (let i = 0; i < words; i++) {
      const word = wordOf(i, s);
      expected.set(word, (expected.get(word) ?? 0) + 1);
    }
  }
  return expected;
}

/**
 * The counts every subtask of vertex `vertex` (default `Count`) reported, summed per word; a
 * word counted by two subtasks fails the test (keyed partitioning is broken).
 */
export function totals(
  results: ReadonlyMap<string, readonly unknown[]>,
  vertex = "Count",
): Map<string, number> {
  const total = new Map<string, number>();
  for (const partial of results.get(vertex) ?? []) {
    for (const [word, n] of Object.entries(partial as Record<string, number>)) {
      expect(total.has(word), `${word} reached two ${vertex} subtasks`).toBe(false);
      total.set(word, n);
    }
  }
  return total;
}

/**
 * A job `name`: `Source` (2 subtasks, each emitting the words its `source` configuration says)
 * → HASH by word → `Count` (2 subtasks, with the `count` configuration).
 */
export function wordCountGraph(name: string, source: JsonObject, count: JsonObject = {}): JobGraph {
  const graph = new JobGraph(name);
  const sources = addSource(graph, { parallelism: 2, configuration: source });
  const counts = graph.addVertex({
    name: "Count",
    parallelism: 2,
    invokable: "count",
    configuration: count,
  });
  graph.connect(sources, counts, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "string",
  });
  return graph;
}

/**
 * A checkpointed source's loop: emits `wordAt(offset)` from the restored offset (0 on a first
 * attempt) while `more(offset)`, with the offset as the task's state; after each word it awaits
 * `pause(offset)` when that returns a promise. Resolves with the final offset.
 */
export async function emitFromOffset(
  task: Task,
  more: (offset: number) => boolean,
  wordAt: (offset: number) => string,
  pause: (offset: number) => Promise<void> | undefined,
): Promise<number> {
  let offset = (task.restoredState as { offset: number } | undefined)?.offset ?? 0;
  task.setCheckpointHandler({ snapshotState: () => ({ offset }) });
  const writer = task.writer<string>();
  while (more(offset)) {
    if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
    writer.emit(wordAt(offset));
    offset++;
    // Only a real pause awaits: awaiting nothing would still cost a microtask per word.
    const paused = pause(offset);
    if (paused !== undefined) await paused;
  }
  return offset;
}
