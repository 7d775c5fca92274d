import { afterEach, describe, expect, it, vi } from "vitest";
import {
  BufferPoolDestroyedError,
  ErrorCodes,
  IllegalArgumentError,
  IllegalStateError,
  InsufficientBuffersError,
  TimeoutError,
} from "../errors.js";
import { expectError, expectSluiceError, must } from "../testing/index.js";
import type { LocalBufferPool } from "./local-buffer-pool.js";
import { MemorySegment } from "./memory-segment.js";
import { NetworkBufferPool } from "./network-buffer-pool.js";
import { leakCheckedPools, recycleAll, requestAll, UNBOUNDED } from "./test-support/pools.js";

const newGlobal = leakCheckedPools();

// The exclusive-buffer wait tests use fake timers.
afterEach(() => {
  vi.useRealTimers();
});

function sizes(...pools: LocalBufferPool[]): number[] {
  return pools.map((pool) => pool.getNumBuffers());
}

/**
 * An InsufficientBuffersError names what makes more buffers or needs fewer: network memory,
 * buffers per channel and gate, a SMALLER segment size (the same memory in more buffers) and the
 * parallelism; never a larger segment size, which makes fewer buffers.
 */
function expectTheLeversThatMakeMoreBuffers(message: string): void {
  for (const key of [
    "taskmanager.memory.network.min",
    "taskmanager.memory.network.max",
    "taskmanager.memory.network.fraction",
    "taskmanager.network.memory.buffers-per-channel",
    "taskmanager.network.memory.floating-buffers-per-gate",
    "taskmanager.network.sort-shuffle.min-buffers",
  ]) {
    expect(message).toContain(`'${key}'`);
  }
  expect(message).toContain(
    "a smaller 'taskmanager.memory.segment-size', which makes more buffers of the same memory",
  );
  expect(message).toContain("lower the parallelism");
  expect(message).not.toMatch(/(raise|increase|larger|bigger)[^.;]*segment-size/i);
}

describe("NetworkBufferPool", () => {
  describe("construction and accounting", () => {
    it("allocates the given number of segments of the given size, all available", () => {
      const global = newGlobal(5, 128);
      expect(global.totalNumberOfMemorySegments).toBe(5);
      expect(global.segmentSize).toBe(128);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(5);
      expect(global.getNumberOfUsedMemorySegments()).toBe(0);
      expect(global.getNumberOfUnreservedSegments()).toBe(5);
      expect(global.getUsage()).toBe(0);
      expect(global.isAvailable()).toBe(true);
    });

    it("sizes itself from a byte budget, rounding down to whole segments", () => {
      const global = NetworkBufferPool.fromMemorySize(1000, 128);
      expect(global.totalNumberOfMemorySegments).toBe(7);
      global.destroy();
    });

    it("rejects a negative segment count and a too small or fractional segment size", () => {
      expectError(
        () => new NetworkBufferPool(-1),
        IllegalArgumentError,
        ErrorCodes.INVALID_ARGUMENT,
      );
      expectError(
        () => new NetworkBufferPool(1.5),
        IllegalArgumentError,
        ErrorCodes.INVALID_ARGUMENT,
      );
      expectError(
        () => new NetworkBufferPool(1, 32),
        IllegalArgumentError,
        ErrorCodes.INVALID_ARGUMENT,
      );
      expectError(
        () => new NetworkBufferPool(1, 64.5),
        IllegalArgumentError,
        ErrorCodes.INVALID_ARGUMENT,
      );
    });

    it("tracks reservations and used segments through create, request, destroy", () => {
      const global = newGlobal(10);
      const a = global.createBufferPool(3, 5);
      expect(global.getNumberOfRegisteredBufferPools()).toBe(1);
      expect(global.getNumberOfUnreservedSegments()).toBe(7);
      // Pools take segments lazily: creating one takes nothing yet.
      expect(global.getNumberOfAvailableMemorySegments()).toBe(10);
      const buffers = requestAll(a, 4);
      expect(global.getNumberOfUsedMemorySegments()).toBe(4);
      expect(global.getUsage()).toBeCloseTo(0.4);
      const exclusive = global.requestUnpooledMemorySegments(2);
      expect(global.getNumberOfUnreservedSegments()).toBe(5);
      expect(global.getNumberOfUsedMemorySegments()).toBe(6);
      recycleAll(buffers);
      a.destroy();
      expect(global.getNumberOfRegisteredBufferPools()).toBe(0);
      expect(global.getNumberOfUnreservedSegments()).toBe(8);
      global.recycleUnpooledMemorySegments(exclusive);
      expect(global.getNumberOfUnreservedSegments()).toBe(10);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(10);
    });

    it("refuses a segment it does not own", () => {
      const global = newGlobal(2);
      const other = newGlobal(2);
      const foreign = other.requestUnpooledMemorySegments(1);
      expectError(
        () => global.recycleUnpooledMemorySegments(foreign),
        IllegalStateError,
        ErrorCodes.ILLEGAL_STATE,
      );
      expectError(
        () => global.recycleUnpooledMemorySegments([MemorySegment.allocateUnpooled(64)]),
        IllegalStateError,
        ErrorCodes.ILLEGAL_STATE,
      );
      expect(global.getNumberOfAvailableMemorySegments()).toBe(2);
      other.recycleUnpooledMemorySegments(foreign);
    });
  });

  describe("createBufferPool", () => {
    it("validates required and max", () => {
      const global = newGlobal(4);
      for (const [required, max] of [
        [-1, 4],
        [1.5, 4],
        [3, 2],
        [1, Number.NaN],
      ] as const) {
        expectError(
          () => global.createBufferPool(required, max),
          IllegalArgumentError,
          ErrorCodes.INVALID_ARGUMENT,
        );
      }
      expect(global.getNumberOfRegisteredBufferPools()).toBe(0);
      expect(global.getNumberOfUnreservedSegments()).toBe(4);
    });

    it("fails with InsufficientBuffersError naming the counts and what makes more buffers (more memory, smaller segments, fewer channels)", () => {
      const global = newGlobal(10);
      const a = global.createBufferPool(4, 8);
      const error = expectError(
        () => global.createBufferPool(7, 7),
        InsufficientBuffersError,
        ErrorCodes.INSUFFICIENT_BUFFERS,
      );
      expect(error.message).toContain("required 7");
      expect(error.message).toContain("only 6 of 10");
      expectTheLeversThatMakeMoreBuffers(error.message);
      // The failed request left no reservation and no pool behind.
      expect(global.getNumberOfRegisteredBufferPools()).toBe(1);
      expect(global.getNumberOfUnreservedSegments()).toBe(6);
      expect(a.getNumBuffers()).toBe(8);
      a.destroy();
    });

    it("accepts pools whose required counts use up every segment exactly", () => {
      const global = newGlobal(10);
      const a = global.createBufferPool(6, UNBOUNDED);
      const b = global.createBufferPool(4, UNBOUNDED);
      expect(sizes(a, b)).toEqual([6, 4]);
      expect(global.getNumberOfUnreservedSegments()).toBe(0);
      expect(() => global.createBufferPool(1, 1)).toThrow(InsufficientBuffersError);
      const zero = global.createBufferPool(0, 5);
      expect(zero.getNumBuffers()).toBe(0);
      expect(zero.requestBuffer()).toBeUndefined();
      const fromA = requestAll(a, 6);
      const fromB = requestAll(b, 4);
      expect(a.requestBuffer()).toBeUndefined();
      recycleAll(fromA);
      recycleAll(fromB);
      zero.destroy();
      a.destroy();
      b.destroy();
    });

    it("gives back the reservation when the pool's options are invalid", () => {
      const global = newGlobal(4);
      expectError(
        () => global.createBufferPool(2, 4, { maxBuffersPerChannel: 0, numberOfSubpartitions: 1 }),
        IllegalArgumentError,
        ErrorCodes.INVALID_ARGUMENT,
      );
      expect(global.getNumberOfUnreservedSegments()).toBe(4);
      expect(global.getNumberOfRegisteredBufferPools()).toBe(0);
      const pool = global.createBufferPool(4, 4);
      expect(pool.getNumBuffers()).toBe(4);
      pool.destroy();
    });
  });

  describe("redistribution of excess segments", () => {
    it("gives a lone pool everything up to its max", () => {
      const global = newGlobal(20);
      expect(global.createBufferPool(1, UNBOUNDED).getNumBuffers()).toBe(20);
      const bounded = newGlobal(20).createBufferPool(1, 10);
      expect(bounded.getNumBuffers()).toBe(10);
    });

    it("splits the excess evenly between equal pools (Flink's uniform distribution)", () => {
      const global = newGlobal(20);
      const first = global.createBufferPool(1, 20);
      expect(first.getNumBuffers()).toBe(20);
      const second = global.createBufferPool(1, 20);
      expect(sizes(first, second)).toEqual([10, 10]);

      const all = newGlobal(20);
      const half1 = all.createBufferPool(10, UNBOUNDED);
      expect(half1.getNumBuffers()).toBe(20);
      const half2 = all.createBufferPool(10, UNBOUNDED);
      expect(sizes(half1, half2)).toEqual([10, 10]);
    });

    it("never grows a bounded pool past its max", () => {
      const global = newGlobal(30);
      const first = global.createBufferPool(1, 10);
      const second = global.createBufferPool(1, 10);
      expect(sizes(first, second)).toEqual([10, 10]);
    });

    it("spreads too few segments without exceeding the total (3 segments, pools of [1, 10])", () => {
      const global = newGlobal(3);
      const first = global.createBufferPool(1, 10);
      expect(first.getNumBuffers()).toBe(3);
      const second = global.createBufferPool(1, 10);
      expect(sizes(first, second)).toEqual([1, 2]);
      const third = global.createBufferPool(1, 10);
      expect(sizes(first, second, third)).toEqual([1, 1, 1]);
      third.destroy();
      expect(sizes(first, second)).toEqual([1, 2]);
      second.destroy();
      expect(first.getNumBuffers()).toBe(3);
    });

    it("shrinks pools for exclusive segments and grows them back on return (Flink's Bounded4)", () => {
      const global = newGlobal(10);
      const first = global.createBufferPool(1, 10);
      expect(first.getNumBuffers()).toBe(10);
      const list1 = global.requestUnpooledMemorySegments(2);
      expect(first.getNumBuffers()).toBe(8);
      const second = global.createBufferPool(1, 10);
      expect(sizes(first, second)).toEqual([4, 4]);
      const list2 = global.requestUnpooledMemorySegments(2);
      expect(sizes(first, second)).toEqual([3, 3]);
      const list3 = global.requestUnpooledMemorySegments(2);
      expect(sizes(first, second)).toEqual([2, 2]);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(4);
      global.recycleUnpooledMemorySegments(list1);
      expect(sizes(first, second)).toEqual([3, 3]);
      global.recycleUnpooledMemorySegments(list2);
      expect(sizes(first, second)).toEqual([4, 4]);
      global.recycleUnpooledMemorySegments(list3);
      expect(sizes(first, second)).toEqual([5, 5]);
      first.destroy();
      expect(second.getNumBuffers()).toBe(10);
    });

    it("does not let an unbounded pool starve bounded ones (Flink's Mixed1)", () => {
      const global = newGlobal(100);
      const first = global.createBufferPool(1, 10);
      const second = global.createBufferPool(1, 10);
      expect(sizes(first, second)).toEqual([10, 10]);
      const third = global.createBufferPool(1, UNBOUNDED);
      // Capacities are capped at the 97 unreserved segments: 9, 9, 97 parts of 115.
      expect(sizes(first, second, third)).toEqual([8, 9, 83]);
      // Flink's tolerance: avail * min(avail, max - 1) / (avail + 18) + 1, or one more.
      for (const pool of [first, second, third]) {
        const avail = 97;
        const expected =
          Math.floor((avail * Math.min(avail, pool.getMaxNumberOfMemorySegments() - 1)) / 115) + 1;
        expect([expected, expected + 1]).toContain(pool.getNumBuffers());
      }
      third.destroy();
      expect(sizes(first, second)).toEqual([10, 10]);
    });

    it("gives a pool with max = required no excess", () => {
      const global = newGlobal(10);
      const fixed = global.createBufferPool(3, 3);
      const growing = global.createBufferPool(2, UNBOUNDED);
      expect(sizes(fixed, growing)).toEqual([3, 7]);
      growing.destroy();
      expect(fixed.getNumBuffers()).toBe(3);
      const buffers = requestAll(fixed, 3);
      expect(fixed.requestBuffer()).toBeUndefined();
      expect(global.getNumberOfAvailableMemorySegments()).toBe(7);
      recycleAll(buffers);
    });

    it("splits between several unbounded pools with exact sizes that sum to the total", () => {
      const global = newGlobal(10);
      const a = global.createBufferPool(1, UNBOUNDED);
      const b = global.createBufferPool(1, UNBOUNDED);
      expect(sizes(a, b)).toEqual([5, 5]);
      const c = global.createBufferPool(1, UNBOUNDED);
      expect(sizes(a, b, c)).toEqual([3, 3, 4]);
      b.destroy();
      expect(sizes(a, c)).toEqual([5, 5]);
      const buffers = requestAll(a, 5);
      expect(a.requestBuffer()).toBeUndefined();
      recycleAll(buffers);
    });

    it("never hands out more than the total across many pool configurations", () => {
      const total = 37;
      const configs: Array<[number, number]> = [
        [1, 10],
        [0, UNBOUNDED],
        [5, 5],
        [2, 40],
        [3, 7],
        [0, 1],
        [4, UNBOUNDED],
      ];
      const global = newGlobal(total);
      const pools: LocalBufferPool[] = [];
      const check = (): void => {
        const sum = pools.reduce((acc, pool) => acc + pool.getNumBuffers(), 0);
        expect(sum).toBeLessThanOrEqual(total);
        for (const pool of pools) {
          expect(pool.getNumBuffers()).toBeGreaterThanOrEqual(
            pool.getNumberOfRequiredMemorySegments(),
          );
          expect(pool.getNumBuffers()).toBeLessThanOrEqual(pool.getMaxNumberOfMemorySegments());
        }
        // All excess is used when some pool could take it.
        const required = pools.reduce((acc, p) => acc + p.getNumberOfRequiredMemorySegments(), 0);
        const capacity = pools.reduce(
          (acc, p) =>
            acc +
            Math.min(total, p.getMaxNumberOfMemorySegments()) -
            p.getNumberOfRequiredMemorySegments(),
          0,
        );
        expect(sum).toBe(required + Math.min(total - required, capacity));
      };
      for (const [required, max] of configs) {
        pools.push(global.createBufferPool(required, max));
        check();
      }
      while (pools.length > 0) {
        must(pools.shift()).destroy();
        check();
      }
    });
  });

  describe("guaranteed required segments", () => {
    it("frees another pool's idle excess at once when a new pool needs its required segments", () => {
      const global = newGlobal(10);
      const greedy = global.createBufferPool(1, UNBOUNDED);
      recycleAll(requestAll(greedy, 10));
      expect(greedy.getNumberOfAvailableMemorySegments()).toBe(10);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(0);
      const fixed = global.createBufferPool(4, 4);
      expect(greedy.getNumBuffers()).toBe(6);
      expect(greedy.getNumberOfAvailableMemorySegments()).toBe(6);
      const buffers = requestAll(fixed, 4);
      recycleAll(buffers);
      fixed.destroy();
      greedy.destroy();
    });

    it("gets the required segments as soon as a pool holding excess in use recycles it", () => {
      const global = newGlobal(10);
      const greedy = global.createBufferPool(1, UNBOUNDED);
      const held = requestAll(greedy, 10);
      const fixed = global.createBufferPool(4, 4);
      expect(greedy.getNumBuffers()).toBe(6);
      expect(fixed.requestBuffer()).toBeUndefined();
      // The greedy pool is over its size: each recycled segment goes back to the global pool.
      recycleAll(held.splice(0, 4));
      expect(greedy.getNumberOfAvailableMemorySegments()).toBe(0);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(4);
      const fixedBuffers = requestAll(fixed, 4);
      // Back at its size, the greedy pool keeps what it recycles.
      recycleAll(held.splice(0, 1));
      expect(greedy.getNumberOfAvailableMemorySegments()).toBe(1);
      recycleAll(held);
      recycleAll(fixedBuffers);
    });
  });

  describe("requestUnpooledMemorySegments", () => {
    it("hands out distinct segments and counts them as required", () => {
      const global = newGlobal(6);
      const pool = global.createBufferPool(1, UNBOUNDED);
      expect(global.requestUnpooledMemorySegments(0)).toEqual([]);
      const segments = global.requestUnpooledMemorySegments(3);
      expect(new Set(segments).size).toBe(3);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(3);
      expect(pool.getNumBuffers()).toBe(3);
      global.recycleUnpooledMemorySegments(segments);
      expect(pool.getNumBuffers()).toBe(6);
    });

    it("fails with InsufficientBuffersError when more are requested than unreserved", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(8, 8);
      const error = expectError(
        () => global.requestUnpooledMemorySegments(3),
        InsufficientBuffersError,
        ErrorCodes.INSUFFICIENT_BUFFERS,
      );
      expect(error.message).toContain("required 3");
      expect(error.message).toContain("only 2 of 10");
      expectTheLeversThatMakeMoreBuffers(error.message);
      expect(global.getNumberOfUnreservedSegments()).toBe(2);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(10);
      pool.destroy();
      expect(() => global.requestUnpooledMemorySegments(11)).toThrow(InsufficientBuffersError);
    });

    it("fails without leaking the reservation while pools still use their excess", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(2, UNBOUNDED);
      const held = requestAll(pool, 9);
      const error = expectError(
        () => global.requestUnpooledMemorySegments(3),
        InsufficientBuffersError,
        ErrorCodes.INSUFFICIENT_BUFFERS,
      );
      expect(error.message).toContain("required 3");
      expect(error.message).toContain("only 1 are free");
      expectTheLeversThatMakeMoreBuffers(error.message);
      expect(global.getNumberOfUnreservedSegments()).toBe(8);
      expect(pool.getNumBuffers()).toBe(10);
      recycleAll(held);
      const segments = global.requestUnpooledMemorySegments(3);
      expect(pool.getNumBuffers()).toBe(7);
      global.recycleUnpooledMemorySegments(segments);
    });
  });

  describe("requestUnpooledMemorySegmentsWithin (waits up to buffers-request-timeout)", () => {
    it("returns at once when the segments are free", () => {
      const global = newGlobal(4);
      const segments = global.requestUnpooledMemorySegmentsWithin(2, 1_000);
      expect(Array.isArray(segments)).toBe(true);
      global.recycleUnpooledMemorySegments(segments as MemorySegment[]);
    });

    // Flink's NetworkBufferPoolTest: a pool took every buffer (more than it requires); an
    // exclusive request waits until they are recycled instead of failing.
    it("waits for the buffers a pool took beyond its guarantee to be recycled", async () => {
      const numBuffers = 10;
      const global = newGlobal(numBuffers, 128);
      const pool = global.createBufferPool(numBuffers / 2, numBuffers);
      const taken = requestAll(pool, numBuffers);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(0);
      const request = global.requestUnpooledMemorySegmentsWithin(numBuffers / 2, 30_000);
      expect(request).toBeInstanceOf(Promise);
      let segments: MemorySegment[] | undefined;
      void (request as Promise<MemorySegment[]>).then((s) => {
        segments = s;
      });
      await Promise.resolve();
      expect(segments).toBeUndefined();
      // The pool's owner recycles its buffers later (Flink: from another thread).
      setImmediate(() => recycleAll(taken));
      const granted = await request;
      expect(new Set(granted).size).toBe(numBuffers / 2);
      expect(pool.getNumBuffers()).toBe(numBuffers / 2);
      global.recycleUnpooledMemorySegments(granted);
      expect(global.getNumberOfUnreservedSegments()).toBe(numBuffers / 2);
    });

    it("fails after the timeout, naming the key, when the buffers are not recycled, and gives the guarantee back", async () => {
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      const numBuffers = 10;
      const global = newGlobal(numBuffers, 128);
      const pool = global.createBufferPool(1, numBuffers);
      const taken = requestAll(pool, numBuffers);
      const request = global.requestUnpooledMemorySegmentsWithin(3, 50) as Promise<MemorySegment[]>;
      const failed = request.then(
        () => undefined,
        (error: unknown) => error,
      );
      vi.advanceTimersByTime(50);
      const error = expectSluiceError(
        await failed,
        InsufficientBuffersError,
        ErrorCodes.INSUFFICIENT_BUFFERS,
      );
      expect(error.message).toContain("taskmanager.network.memory.buffers-request-timeout");
      expect(error.message).toContain("within 50 ms");
      expectTheLeversThatMakeMoreBuffers(error.message);
      expect(error.cause).toBeInstanceOf(TimeoutError);
      expect(global.getNumberOfUnreservedSegments()).toBe(numBuffers - 1);
      expect(pool.getNumBuffers()).toBe(numBuffers); // its share is back
      recycleAll(taken);
    });

    it("fails at once when the segments cannot even be guaranteed", () => {
      const global = newGlobal(10);
      global.createBufferPool(8, 8);
      expectError(
        () => global.requestUnpooledMemorySegmentsWithin(3, 30_000),
        InsufficientBuffersError,
        ErrorCodes.INSUFFICIENT_BUFFERS,
      );
      expect(global.getNumberOfUnreservedSegments()).toBe(2);
    });

    it("rejects a waiting request when the pool is destroyed", async () => {
      const global = newGlobal(4);
      const pool = global.createBufferPool(1, 4);
      const taken = requestAll(pool, 4);
      const request = global.requestUnpooledMemorySegmentsWithin(2, 30_000) as Promise<
        MemorySegment[]
      >;
      global.destroy();
      expectSluiceError(
        await request.then(
          () => undefined,
          (error: unknown) => error,
        ),
        BufferPoolDestroyedError,
        ErrorCodes.BUFFER_POOL_DESTROYED,
      );
      recycleAll(taken);
    });
  });

  describe("availability", () => {
    it("is unavailable with no segments and shares one future until a segment comes back", async () => {
      const global = newGlobal(2);
      expect(newGlobal(0).isAvailable()).toBe(false);
      const segments = global.requestUnpooledMemorySegments(2);
      expect(global.isAvailable()).toBe(false);
      const future = global.getAvailableFuture();
      expect(global.getAvailableFuture()).toBe(future);
      let resolved = false;
      void future.then(() => {
        resolved = true;
      });
      await Promise.resolve();
      expect(resolved).toBe(false);
      global.recycleUnpooledMemorySegments(segments.slice(0, 1));
      await future;
      expect(resolved).toBe(true);
      expect(global.isAvailable()).toBe(true);
      global.recycleUnpooledMemorySegments(segments.slice(1));
    });
  });

  describe("destroy", () => {
    it("destroys every local pool and refuses new requests with BufferPoolDestroyedError", async () => {
      const global = newGlobal(4);
      const a = global.createBufferPool(1, 4);
      const b = global.createBufferPool(1, 4);
      const held = must(a.requestBuffer());
      const exclusive = global.requestUnpooledMemorySegments(1);
      global.destroy();
      global.destroy();
      expect(global.isDestroyed()).toBe(true);
      expect(a.isDestroyed()).toBe(true);
      expect(b.isDestroyed()).toBe(true);
      expect(global.getNumberOfRegisteredBufferPools()).toBe(0);
      await global.getAvailableFuture();
      expectError(
        () => global.createBufferPool(1, 1),
        BufferPoolDestroyedError,
        ErrorCodes.BUFFER_POOL_DESTROYED,
      );
      expectError(
        () => global.requestUnpooledMemorySegments(1),
        BufferPoolDestroyedError,
        ErrorCodes.BUFFER_POOL_DESTROYED,
      );
      // Leased segments still come home after destroy.
      held.recycleBuffer();
      global.recycleUnpooledMemorySegments(exclusive);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(4);
    });
  });
});
