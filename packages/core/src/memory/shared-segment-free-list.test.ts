import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SharedSegmentFreeList } from "./shared-segment-free-list.js";
import { runInWorkers } from "./test-support/worker-threads.js";

/** Property runs (each starts worker threads); `SLUICE_FUZZ_RUNS` raises it. */
const RUNS = Number(process.env.SLUICE_FUZZ_RUNS ?? 15);

function freeListOf(count: number): { list: SharedSegmentFreeList; words: Int32Array } {
  const words = new Int32Array(new SharedArrayBuffer(4 * SharedSegmentFreeList.wordsFor(count)));
  return { list: SharedSegmentFreeList.initialize(words, 0, count), words };
}

/**
 * One worker's part of the property: after a start barrier, it takes and gives values back as
 * its plan says, and claims each value it takes in `holders` (value → worker) with a
 * compare-and-swap. A value held by two workers at once, or a free list that is full when a
 * taken value comes back, is a violation. It gives back everything it still holds at the end.
 */
const WORKER_PLAN = `
  const { words, holders, start, count, plan, id } = data;
  const list = core.SharedSegmentFreeList.attach(new Int32Array(words), 0, count);
  const holder = new Int32Array(holders);
  const barrier = new Int32Array(start);
  Atomics.add(barrier, 1, 1);
  Atomics.wait(barrier, 0, 0);
  const held = [];
  let violations = 0;
  let taken = 0;
  const give = (at) => {
    const [value] = held.splice(at % held.length, 1);
    Atomics.store(holder, value, -1);
    if (!list.offer(value)) violations++;
  };
  for (const step of plan) {
    if (step >= 0 || held.length === 0) {
      const value = list.poll();
      if (value < 0) continue;
      taken++;
      if (Atomics.compareExchange(holder, value, -1, id) !== -1) violations++;
      held.push(value);
    } else {
      give(-step);
    }
  }
  while (held.length > 0) give(0);
  return { violations, taken };
`;

describe("SharedSegmentFreeList", () => {
  it("hands out every value once, first in first out, and says when it is empty and when full", () => {
    const { list } = freeListOf(3);
    expect(list.capacity).toBe(4);
    for (const value of [7, 1, 5, 0]) expect(list.offer(value)).toBe(true);
    expect(list.offer(9)).toBe(false);
    expect([list.poll(), list.poll(), list.poll(), list.poll()]).toEqual([7, 1, 5, 0]);
    expect(list.poll()).toBe(-1);
  });

  it("keeps working when its positions wrap around the int32 range", () => {
    const { list, words } = freeListOf(4);
    // Move both positions (and the cells' sequences) to just below 2^31, as after billions of
    // operations: the next steps cross from 2^31 − 1 to −2^31.
    const start = 0x7ffffffe;
    Atomics.store(words, 0, start);
    Atomics.store(words, 16, start);
    for (let i = 0; i < 4; i++) Atomics.store(words, 32 + 2 * ((start + i) & 3), (start + i) | 0);
    for (let round = 0; round < 10; round++) {
      for (const value of [round, round + 100, round + 200]) expect(list.offer(value)).toBe(true);
      expect([list.poll(), list.poll(), list.poll()]).toEqual([round, round + 100, round + 200]);
    }
    expect(list.poll()).toBe(-1);
  });

  it(
    "never hands one value to two threads at once, loses none and duplicates none, whatever several worker threads take and give back concurrently",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 48 }),
          fc.array(
            fc.array(fc.integer({ min: -40, max: 40 }), { minLength: 200, maxLength: 3000 }),
            {
              minLength: 2,
              maxLength: 4,
            },
          ),
          async (count, plans) => {
            const { list, words } = freeListOf(count);
            for (let value = 0; value < count; value++) list.offer(value);
            const holders = new SharedArrayBuffer(4 * count);
            new Int32Array(holders).fill(-1);
            const start = new SharedArrayBuffer(8);
            const barrier = new Int32Array(start);
            const results = runInWorkers(
              WORKER_PLAN,
              plans.map((plan, id) => ({ words: words.buffer, holders, start, count, plan, id })),
            );
            // Every worker is at the barrier: release them at once, for the most contention.
            while (Atomics.load(barrier, 1) < plans.length) {
              await new Promise((resolve) => setTimeout(resolve, 1));
            }
            Atomics.store(barrier, 0, 1);
            Atomics.notify(barrier, 0);
            const outcomes = (await results) as { violations: number; taken: number }[];
            expect(outcomes.map((outcome) => outcome.violations)).toEqual(plans.map(() => 0));
            const values: number[] = [];
            for (let value = list.poll(); value >= 0; value = list.poll()) values.push(value);
            expect(values.sort((a, b) => a - b)).toEqual([...Array(count).keys()]);
          },
        ),
        { numRuns: RUNS },
      );
    },
    RUNS * 10_000,
  );
});
