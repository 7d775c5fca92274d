import type { JobResult } from "@sluice/runtime";
import { expect } from "vitest";
import type { Consumed, Produced } from "./tck-tasks.js";

/** What the subtasks of consumer vertex `vertex` returned, in subtask order. */
export function consumedOf(result: JobResult, vertex = "Consumer"): Consumed[] {
  return (result.results.get(vertex) ?? []) as unknown as Consumed[];
}

/** What the Producer subtasks returned, in subtask order. */
export function producedOf(result: JobResult): Produced[] {
  return (result.results.get("Producer") ?? []) as unknown as Produced[];
}

/**
 * The subtasks of consumer vertex `vertex` ran and, together, got `records` records of each of
 * `producers` producers, every one intact and in order.
 */
export function expectReadInFull(
  result: JobResult,
  producers: number,
  records: number,
  vertex = "Consumer",
): void {
  const consumed = consumedOf(result, vertex);
  expect(consumed.length, `${vertex} ran`).toBeGreaterThan(0);
  for (const c of consumed) expect(c.violations).toEqual([]);
  for (let p = 0; p < producers; p++) {
    expect(consumed.reduce((sum, c) => sum + (c.counts[p] ?? 0), 0)).toBe(records);
  }
}
