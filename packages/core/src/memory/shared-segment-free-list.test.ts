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
 * compare-and-swap: a value held by two workers at once is a violation. It gives back everything
 * it still holds at the end.
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
    list.offer(value);
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
  it("hands out every value once, the one given back last first, and says when it is empty", () => {
    const { list } = freeListOf(8);
    expect(list.capacity).toBe(8);
    for (const value of [7, 1, 5, 0]) expect(list.offer(value)).toBe(true);
    expect([list.poll(), list.poll(), list.poll(), list.poll()]).toEqual([0, 5, 1, 7]);
    expect(list.poll()).toBe(-1);
    expect(() => list.offer(8)).toThrow(/out of the free list's \[0, 8\)/);
  });

  it("keeps working when the head's version tag wraps around 2^32", () => {
    const { list, words } = freeListOf(4);
    // The tag just below 2^32, as after billions of changes: the next ones wrap it to 0.
    new BigInt64Array(words.buffer, 0, 1)[0] = BigInt.asIntN(64, 0xfffffffen << 32n);
    for (let round = 0; round < 10; round++) {
      for (const value of [1, 3, 2]) list.offer(value);
      expect([list.poll(), list.poll(), list.poll()]).toEqual([2, 3, 1]);
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
