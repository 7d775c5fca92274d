import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ErrorCodes, IllegalStateError, InsufficientBuffersError } from "../errors.js";
import { expectError, must, waitFor } from "../testing/index.js";
import { NetworkBufferPool } from "./network-buffer-pool.js";
import { SharedNetworkMemory } from "./shared-network-memory.js";
import { runInWorkers, startInWorker } from "./test-support/worker-threads.js";

/** Property runs (each starts worker threads); `SLUICE_FUZZ_RUNS` raises it. */
const RUNS = Number(process.env.SLUICE_FUZZ_RUNS ?? 10);

/** Two threads' views of one memory of `segments` 64-byte segments, and a pool on each. */
function twoThreads(segments: number) {
  const memory = SharedNetworkMemory.create(segments, 64, 4);
  const other = SharedNetworkMemory.attach(memory.handle, 1);
  return {
    memory,
    other,
    pool0: new NetworkBufferPool(memory),
    pool1: new NetworkBufferPool(other),
  };
}

/**
 * One worker thread's part of the property: a NetworkBufferPool over the shared memory, local
 * pools of random guarantees, and random requests and recycles. Each buffer it holds carries its
 * mark (thread, serial) in its first bytes, checked before it is recycled: a segment handed to
 * two threads at once would be overwritten by the other. Guarantees it cannot get are counted,
 * not errors (other threads may hold them). Everything goes back at the end.
 */
const POOL_WORKER = `
  const { handle, thread, plan } = data;
  const memory = core.SharedNetworkMemory.attach(handle, thread);
  const global = new core.NetworkBufferPool(memory);
  const pools = [];
  const held = [];
  let serial = 0;
  let violations = 0;
  let refusals = 0;
  const recycle = (at) => {
    const [entry] = held.splice(at % held.length, 1);
    const view = entry.buffer.view();
    if (view.readInt32BE(0) !== thread || view.readInt32BE(4) !== entry.serial) violations++;
    entry.buffer.recycleBuffer();
  };
  for (const [op, a, b] of plan) {
    if (op === 0 && pools.length < 4) {
      try {
        pools.push(global.createBufferPool(a % 6, (a % 6) + (b % 8)));
      } catch (error) {
        if (error.code !== "SLUICE_ERR_INSUFFICIENT_BUFFERS") throw error;
        refusals++;
      }
    } else if (op === 1 && pools.length > 0) {
      const buffer = pools[a % pools.length].requestBuffer();
      if (buffer === undefined) continue;
      buffer.setSize(8);
      const view = buffer.view();
      view.writeInt32BE(thread, 0);
      view.writeInt32BE(++serial, 4);
      held.push({ buffer, serial });
    } else if (op === 2 && held.length > 0) {
      recycle(a);
    } else if (op === 3 && pools.length > 0) {
      const [pool] = pools.splice(a % pools.length, 1);
      pool.destroy();
    }
    if (serial % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  while (held.length > 0) recycle(0);
  for (const pool of pools) pool.destroy();
  global.destroy();
  return { violations, refusals, requested: serial };
`;

describe("SharedNetworkMemory", () => {
  it("hands out segments of the shared bytes to any thread and takes them back", () => {
    const { memory, other } = twoThreads(3);
    const index = other.takeSegment();
    expect(other.ownerOfSegment(index)).toBe(1);
    expect(memory.getNumberOfFreeSegments()).toBe(2);
    other.segment(index).putInt(0, 42);
    // The same bytes, seen from thread 0.
    expect(memory.segment(index).getInt(0)).toBe(42);
    expect(memory.indexOf(other.segment(index))).toBe(index);
    other.giveSegment(index);
    expect(memory.getNumberOfFreeSegments()).toBe(3);
    expect(memory.ownerOfSegment(index)).toBe(-1);
  });

  it("refuses a segment given back by a thread that does not own it, or while it is lent out", () => {
    const { memory, other } = twoThreads(2);
    const index = other.takeSegment();
    expectError(
      () => memory.giveSegment(index),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
      "owner 1",
    );
    other.lend(index);
    expectError(
      () => other.giveSegment(index),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
      "1 loans",
    );
    other.returnLoan(index);
    other.giveSegment(index);
  });

  it("takes back what a dead thread held: its guarantees at once, a lent segment with its last loan", () => {
    const { memory, other } = twoThreads(4);
    expect(other.reserve(3)).toBe(true);
    const kept = other.takeSegment();
    const lent = other.takeSegment();
    other.lend(lent);
    other.lend(lent);
    expect(memory.getNumberOfRequiredSegments()).toBe(3);

    expect(memory.reclaimThread(1)).toBe(1);
    expect(memory.getNumberOfRequiredSegments()).toBe(0);
    expect(memory.getNumberOfRequiredSegmentsOf(1)).toBe(0);
    expect(memory.ownerOfSegment(kept)).toBe(-1);
    expect(memory.getNumberOfFreeSegments()).toBe(3);
    // The borrowers still read the lent segment: it is free only after both returned it.
    memory.returnLoan(lent);
    expect(memory.getNumberOfFreeSegments()).toBe(3);
    memory.returnLoan(lent);
    expect(memory.getNumberOfFreeSegments()).toBe(4);
  });
});

describe("NetworkBufferPool over shared memory", () => {
  it("counts guarantees once for every thread: what one thread was guaranteed another is refused", () => {
    const { pool0, pool1 } = twoThreads(10);
    const guaranteed = pool0.createBufferPool(6, 6);
    expectError(
      () => pool1.createBufferPool(5, 5),
      InsufficientBuffersError,
      ErrorCodes.INSUFFICIENT_BUFFERS,
      "required 5, but only 4 of 10",
    );
    const rest = pool1.createBufferPool(4, 4);
    expect(pool1.getNumberOfUnreservedSegments()).toBe(0);
    guaranteed.destroy();
    rest.destroy();
    expect(pool0.getNumberOfUnreservedSegments()).toBe(10);
  });

  it("spreads the excess over the threads in proportion to what their pools could use", async () => {
    const { memory, pool0, pool1 } = twoThreads(12);
    const a = pool0.createBufferPool(0, 100);
    const b = pool1.createBufferPool(0, 100);
    // Thread 0 learns of thread 1's pool from the generation it bumped, and re-spreads.
    await waitFor(() => a.getNumBuffers() === 6 && b.getNumBuffers() === 6, {
      what: "both threads' pools at half the memory",
    });
    const c = pool1.createBufferPool(0, 100);
    await waitFor(() => a.getNumBuffers() + b.getNumBuffers() + c.getNumBuffers() <= 12, {
      what: "the three pools within the memory",
    });
    expect(a.getNumBuffers()).toBe(4);
    for (const pool of [a, b, c]) pool.destroy();
    expect(memory.getNumberOfFreeSegments()).toBe(12);
  });

  it("wakes a pool waiting for memory when another thread frees a segment", async () => {
    const { pool0, pool1 } = twoThreads(2);
    const holder = pool0.createBufferPool(2, 2);
    const first = must(holder.requestBuffer());
    const second = must(holder.requestBuffer());
    const waiting = pool1.createBufferPool(0, 2);
    expect(waiting.requestBuffer()).toBeUndefined();
    // The guarantees go: the waiting pool may grow, but every segment is still held.
    holder.destroy();
    await waitFor(() => waiting.getNumBuffers() === 2, { what: "the waiting pool's new size" });
    expect(waiting.isAvailable()).toBe(false);
    // Thread 0 frees one: thread 1 learns of it from the shared free count alone.
    first.recycleBuffer();
    await waiting.getAvailableFuture();
    const got = must(waiting.requestBuffer());
    got.recycleBuffer();
    second.recycleBuffer();
    waiting.destroy();
  });

  it("serves a waiting exclusive request with segments another thread frees, even from a worker thread", async () => {
    const memory = SharedNetworkMemory.create(4, 64, 4);
    const pool = new NetworkBufferPool(memory);
    const release = new SharedArrayBuffer(4);
    // A worker thread holds three segments until told to free them.
    const holding = startInWorker(
      `
        const memory = core.SharedNetworkMemory.attach(data.handle, 2);
        const held = [memory.takeSegment(), memory.takeSegment(), memory.takeSegment()];
        parentPort.postMessage({ kind: "holding" });
        while (Atomics.load(new Int32Array(data.release), 0) === 0) {
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
        for (const index of held) memory.giveSegment(index);
        return held.length;
      `,
      { handle: memory.handle, release },
    );
    await new Promise<void>((resolve) =>
      holding.worker.on("message", (m: { kind: string }) => m.kind === "holding" && resolve()),
    );
    const request = pool.requestUnpooledMemorySegmentsWithin(3, 10_000);
    expect(request).toBeInstanceOf(Promise);
    Atomics.store(new Int32Array(release), 0, 1);
    expect(await holding.result).toBe(3);
    const segments = await request;
    expect(segments).toHaveLength(3);
    pool.recycleUnpooledMemorySegments(segments);
    expect(pool).toHaveAllSegmentsAvailable();
    expect(pool.getNumberOfUnreservedSegments()).toBe(4);
  });

  it(
    "hands a segment to one thread at a time and gets every segment and guarantee back, whatever pools on several worker threads request, recycle and destroy concurrently",
    async () => {
      const op = fc.tuple(
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 0, max: 1000 }),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 4, max: 40 }),
          fc.array(fc.array(op, { minLength: 50, maxLength: 600 }), { minLength: 2, maxLength: 4 }),
          async (segments, plans) => {
            const memory = SharedNetworkMemory.create(segments, 64, plans.length + 1);
            const outcomes = (await runInWorkers(
              POOL_WORKER,
              plans.map((plan, i) => ({ handle: memory.handle, thread: i + 1, plan })),
            )) as { violations: number }[];
            expect(outcomes.map((outcome) => outcome.violations)).toEqual(plans.map(() => 0));
            expect(memory.getNumberOfFreeSegments()).toBe(segments);
            expect(memory.getNumberOfRequiredSegments()).toBe(0);
            for (let index = 0; index < segments; index++) {
              expect(memory.ownerOfSegment(index)).toBe(-1);
            }
          },
        ),
        { numRuns: RUNS },
      );
    },
    RUNS * 15_000,
  );
});
