import { describe, expect, it } from "vitest";
import {
  BufferPoolDestroyedError,
  ErrorCodes,
  IllegalArgumentError,
  IllegalStateError,
} from "../errors.js";
import { expectError, must } from "../testing/index.js";
import type { BufferBuilder } from "./buffer-builder.js";
import type { BufferListener } from "./buffer-listener.js";
import type { LocalBufferPool } from "./local-buffer-pool.js";
import type { NetworkBuffer } from "./network-buffer.js";
import type { NetworkBufferPool } from "./network-buffer-pool.js";
import { leakCheckedPools, recycleAll, requestAll, UNBOUNDED } from "./test-support/pools.js";

const newGlobal = leakCheckedPools();

/** Lets every pending promise callback run (one macrotask turn; not a timed sleep). */
function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => {
    settled = true;
  });
  await flush();
  return settled;
}

/** A listener that keeps what it is given and answers `wantsMore` for every offer. */
class RecordingListener implements BufferListener {
  readonly received: NetworkBuffer[] = [];
  destroyedCalls = 0;
  constructor(
    readonly label: string,
    private readonly log: string[],
    private readonly wantsMore = false,
  ) {}
  notifyBufferAvailable(buffer: NetworkBuffer): boolean {
    this.log.push(this.label);
    this.received.push(buffer);
    return this.wantsMore;
  }
  notifyBufferDestroyed(): void {
    this.destroyedCalls++;
  }
}

describe("LocalBufferPool", () => {
  describe("requests", () => {
    it("takes segments from the global pool lazily, one per request", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(2, 4);
      expect(pool.getNumBuffers()).toBe(4);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(10);
      const first = must(pool.requestBuffer());
      expect(global.getNumberOfAvailableMemorySegments()).toBe(9);
      expect(first.getRecycler()).toBe(pool);
      expect(first.getSize()).toBe(0);
      expect(first.getMaxCapacity()).toBe(64);
      first.recycleBuffer();
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
    });

    it("returns undefined once the pool size is reached, even with segments left globally", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(1, 3);
      const buffers = requestAll(pool, 3);
      expect(pool.requestBuffer()).toBeUndefined();
      expect(pool.requestBufferBuilder()).toBeUndefined();
      expect(pool.requestMemorySegment()).toBeUndefined();
      expect(global.getNumberOfAvailableMemorySegments()).toBe(7);
      recycleAll(buffers);
    });

    it("reuses a recycled segment from its free list before asking the global pool", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(1, 3);
      const first = must(pool.requestBuffer());
      const segment = first.getMemorySegment();
      first.recycleBuffer();
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
      const second = must(pool.requestBuffer());
      expect(second.getMemorySegment()).toBe(segment);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(9);
      second.recycleBuffer();
    });

    it("hands out raw segments that come back through recycle", () => {
      const global = newGlobal(4);
      const pool = global.createBufferPool(1, 2);
      const segment = must(pool.requestMemorySegment());
      expect(pool.bestEffortGetNumOfUsedBuffers()).toBe(1);
      pool.recycle(segment);
      expect(pool.bestEffortGetNumOfUsedBuffers()).toBe(0);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
    });

    it("rejects a channel outside its subpartitions", () => {
      const global = newGlobal(4);
      const pool = global.createBufferPool(1, 4, { numberOfSubpartitions: 2 });
      expectError(
        () => pool.requestBufferBuilder(2),
        IllegalArgumentError,
        ErrorCodes.INVALID_ARGUMENT,
      );
      expect(pool.bestEffortGetNumOfUsedBuffers()).toBe(0);
    });

    it("reports used buffers and usage relative to its size", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(1, 4, { name: "gate-7" });
      const buffers = requestAll(pool, 2);
      expect(pool.bestEffortGetNumOfUsedBuffers()).toBe(2);
      expect(pool.getUsage()).toBe(0.5);
      expect(pool.toString()).toContain("gate-7");
      recycleAll(buffers);
      expect(pool.getUsage()).toBe(0);
    });
  });

  describe("availability", () => {
    it("shares one promise while the pool is exhausted and resolves it on recycle", async () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(1, 2);
      expect(pool.isAvailable()).toBe(true);
      const buffers = requestAll(pool, 2);
      expect(pool.isAvailable()).toBe(false);
      const future = pool.getAvailableFuture();
      expect(pool.getAvailableFuture()).toBe(future);
      expect(await isSettled(future)).toBe(false);
      expect(pool.getAvailableFuture()).toBe(future);
      must(buffers.pop()).recycleBuffer();
      expect(pool.isAvailable()).toBe(true);
      expect(await isSettled(future)).toBe(true);
      recycleAll(buffers);
    });

    it("becomes available again when the empty global pool gets a segment back", async () => {
      const global = newGlobal(4);
      const greedy = global.createBufferPool(1, UNBOUNDED);
      const held = requestAll(greedy, 4);
      const waiting = global.createBufferPool(1, UNBOUNDED);
      // 2 unreserved segments split 1:1, so both pools have size 2; `waiting` holds none of its 2.
      expect(greedy.getNumBuffers()).toBe(2);
      expect(waiting.getNumBuffers()).toBe(2);
      expect(waiting.requestBuffer()).toBeUndefined();
      expect(waiting.isAvailable()).toBe(false);
      const future = waiting.getAvailableFuture();
      expect(waiting.getAvailableFuture()).toBe(future);
      expect(await isSettled(future)).toBe(false);
      // greedy is over its size, so the recycled segment goes to the global pool...
      must(held.pop()).recycleBuffer();
      expect(global.getNumberOfAvailableMemorySegments()).toBe(1);
      // ...which wakes the pool waiting for it.
      expect(await isSettled(future)).toBe(true);
      expect(waiting.isAvailable()).toBe(true);
      const buffer = must(waiting.requestBuffer());
      buffer.recycleBuffer();
      recycleAll(held);
    });

    it("reports unavailable once one subpartition holds max-buffers-per-channel buffers", async () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(1, 10, {
        numberOfSubpartitions: 2,
        maxBuffersPerChannel: 2,
      });
      const first = must(pool.requestBufferBuilder(0));
      expect(pool.isAvailable()).toBe(true);
      const second = must(pool.requestBufferBuilder(0));
      expect(pool.getNumberOfBuffersOfChannel(0)).toBe(2);
      expect(pool.isAvailable()).toBe(false);
      const future = pool.getAvailableFuture();
      // Availability is advisory: other channels (and this one) can still get builders.
      const other = must(pool.requestBufferBuilder(1));
      expect(pool.getNumberOfBuffersOfChannel(1)).toBe(1);
      expect(pool.isAvailable()).toBe(false);
      first.close();
      expect(pool.getNumberOfBuffersOfChannel(0)).toBe(1);
      expect(pool.isAvailable()).toBe(true);
      expect(await isSettled(future)).toBe(true);
      second.close();
      other.close();
      expect(pool.getNumberOfBuffersOfChannel(0)).toBe(0);
      expect(pool.getNumberOfBuffersOfChannel(1)).toBe(0);
    });

    it("stays unavailable until a channel over its limit drops below it", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(1, 10, {
        numberOfSubpartitions: 1,
        maxBuffersPerChannel: 1,
      });
      const builders = [0, 1, 2].map(() => must(pool.requestBufferBuilder(0)));
      expect(pool.getNumberOfBuffersOfChannel(0)).toBe(3);
      must(builders.pop()).close();
      expect(pool.isAvailable()).toBe(false);
      must(builders.pop()).close();
      expect(pool.isAvailable()).toBe(false);
      must(builders.pop()).close();
      expect(pool.isAvailable()).toBe(true);
    });

    it("counts a builder's buffer against its channel until the builder and every consumer closed", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(1, 10, { numberOfSubpartitions: 1 });
      const builder = must(pool.requestBufferBuilder(0));
      const consumer = builder.createBufferConsumer();
      builder.appendAndCommit(Uint8Array.of(1, 2, 3));
      const slice = consumer.build();
      builder.close();
      expect(pool.getNumberOfBuffersOfChannel(0)).toBe(1);
      consumer.close();
      expect(pool.getNumberOfBuffersOfChannel(0)).toBe(1);
      slice.recycleBuffer();
      expect(pool.getNumberOfBuffersOfChannel(0)).toBe(0);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
    });

    it("decrements a channel's count for a raw segment recycled with its channel", () => {
      const global = newGlobal(4);
      const pool = global.createBufferPool(1, 4, {
        numberOfSubpartitions: 2,
        maxBuffersPerChannel: 1,
      });
      const segment = must(pool.requestMemorySegment(1));
      expect(pool.getNumberOfBuffersOfChannel(1)).toBe(1);
      expect(pool.isAvailable()).toBe(false);
      expectError(() => pool.recycle(segment, 0), IllegalStateError, ErrorCodes.ILLEGAL_STATE);
      expectError(
        () => pool.recycle(segment, 2),
        IllegalArgumentError,
        ErrorCodes.INVALID_ARGUMENT,
      );
      pool.recycle(segment, 1);
      expect(pool.getNumberOfBuffersOfChannel(1)).toBe(0);
      expect(pool.isAvailable()).toBe(true);
    });
  });

  describe("overdraft", () => {
    function overdraftPool(): { global: NetworkBufferPool; pool: LocalBufferPool } {
      const global = newGlobal(10);
      const pool = global.createBufferPool(2, 2, { maxOverdraftBuffersPerGate: 2 });
      return { global, pool };
    }

    it("hands out up to maxOverdraft extra builders after the pool size is reached", () => {
      const { global, pool } = overdraftPool();
      const builders: BufferBuilder[] = [];
      for (let i = 0; i < 4; i++) builders.push(must(pool.requestBufferBuilder()));
      expect(pool.getNumberOfRequestedOverdraftMemorySegments()).toBe(2);
      expect(pool.requestBufferBuilder()).toBeUndefined();
      expect(global.getNumberOfAvailableMemorySegments()).toBe(6);
      expect(pool.bestEffortGetNumOfUsedBuffers()).toBe(4);
      for (const builder of builders) builder.close();
      expect(pool.getNumberOfRequestedOverdraftMemorySegments()).toBe(0);
    });

    it("takes no overdraft while the pool may still grow or when none is configured", () => {
      const global = newGlobal(10);
      const plain = global.createBufferPool(2, 2);
      const held = [must(plain.requestBufferBuilder()), must(plain.requestBufferBuilder())];
      expect(plain.requestBufferBuilder()).toBeUndefined();
      for (const builder of held) builder.close();
      plain.destroy();
      const { pool } = overdraftPool();
      const first = must(pool.requestBufferBuilder());
      expect(pool.getNumberOfRequestedOverdraftMemorySegments()).toBe(0);
      first.close();
    });

    it("is unavailable while any overdraft segment is out and returns overdraft to the global pool first", async () => {
      const { global, pool } = overdraftPool();
      const builders: BufferBuilder[] = [];
      for (let i = 0; i < 3; i++) builders.push(must(pool.requestBufferBuilder()));
      expect(pool.getNumberOfRequestedOverdraftMemorySegments()).toBe(1);
      expect(pool.isAvailable()).toBe(false);
      const future = pool.getAvailableFuture();
      // Recycling a normal buffer first still pays back the overdraft: to the global pool.
      must(builders.shift()).close();
      expect(pool.getNumberOfRequestedOverdraftMemorySegments()).toBe(0);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(8);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(0);
      // Still at its size with nothing free: unavailable.
      expect(pool.isAvailable()).toBe(false);
      expect(await isSettled(future)).toBe(false);
      must(builders.shift()).close();
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
      expect(pool.isAvailable()).toBe(true);
      expect(await isSettled(future)).toBe(true);
      must(builders.shift()).close();
    });

    it("becomes unavailable again whenever a new overdraft segment is taken", () => {
      const { pool } = overdraftPool();
      const builders = [0, 1, 2, 3].map(() => must(pool.requestBufferBuilder()));
      must(builders.shift()).close();
      must(builders.shift()).close();
      expect(pool.getNumberOfRequestedOverdraftMemorySegments()).toBe(0);
      must(builders.shift()).close();
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
      expect(pool.isAvailable()).toBe(true);
      // Take the free one, then the overdraft again: unavailable while that is out.
      const again = [must(pool.requestBufferBuilder()), must(pool.requestBufferBuilder())];
      expect(pool.getNumberOfRequestedOverdraftMemorySegments()).toBe(1);
      expect(pool.isAvailable()).toBe(false);
      for (const builder of [...again, ...builders]) builder.close();
      expect(pool.isAvailable()).toBe(true);
    });

    it("gives recycled segments back to the global pool, not to listeners, while overdraft is out", () => {
      const global = newGlobal(3);
      const pool = global.createBufferPool(1, 1, { maxOverdraftBuffersPerGate: 1 });
      const normal = must(pool.requestBufferBuilder());
      const overdraft = must(pool.requestBufferBuilder());
      const log: string[] = [];
      const listener = new RecordingListener("L", log);
      expect(pool.addBufferListener(listener)).toBe(true);
      normal.close();
      expect(log).toEqual([]);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(2);
      overdraft.close();
      expect(log).toEqual(["L"]);
      recycleAll(listener.received);
    });
  });

  describe("buffer listeners", () => {
    it("refuses a listener when a buffer can be had now", () => {
      const global = newGlobal(4);
      const pool = global.createBufferPool(1, 2);
      const listener = new RecordingListener("L", []);
      // The pool may still grow from the global pool.
      expect(pool.addBufferListener(listener)).toBe(false);
      const buffers = requestAll(pool, 2);
      must(buffers.pop()).recycleBuffer();
      // A segment sits on the free list.
      expect(pool.addBufferListener(listener)).toBe(false);
      recycleAll(buffers);
      expect(listener.received).toEqual([]);
    });

    it("hands recycled buffers to listeners in FIFO order and keeps those that return true registered", () => {
      const global = newGlobal(2);
      const pool = global.createBufferPool(2, 2);
      const buffers = requestAll(pool, 2);
      const log: string[] = [];
      const keen = new RecordingListener("keen", log, true);
      const once = new RecordingListener("once", log, false);
      expect(pool.addBufferListener(keen)).toBe(true);
      expect(pool.addBufferListener(once)).toBe(true);
      const segments = buffers.map((b) => b.getMemorySegment());
      recycleAll(buffers);
      expect(log).toEqual(["keen", "once"]);
      expect(keen.received.map((b) => b.getMemorySegment())).toEqual([segments[0]]);
      expect(once.received.map((b) => b.getMemorySegment())).toEqual([segments[1]]);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(0);
      // "once" is gone, "keen" stays: the next recycled buffer goes to "keen" again.
      recycleAll(once.received);
      expect(log).toEqual(["keen", "once", "keen"]);
      pool.removeBufferListener(keen);
      pool.removeBufferListener(keen);
      recycleAll(keen.received);
      expect(log).toEqual(["keen", "once", "keen"]);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(2);
    });

    it("lets a listener hand back a buffer it cannot use to the next listener", () => {
      const global = newGlobal(1);
      const pool = global.createBufferPool(1, 1);
      const buffer = must(pool.requestBuffer());
      const log: string[] = [];
      const refusing: BufferListener = {
        notifyBufferAvailable(offered) {
          log.push("refusing");
          offered.recycleBuffer();
          return false;
        },
        notifyBufferDestroyed() {},
      };
      const taker = new RecordingListener("taker", log);
      pool.addBufferListener(refusing);
      pool.addBufferListener(taker);
      buffer.recycleBuffer();
      expect(log).toEqual(["refusing", "taker"]);
      expect(taker.received).toHaveLength(1);
      recycleAll(taker.received);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
    });

    it("wakes a listener with a global segment once the empty global pool gets one back", async () => {
      const global = newGlobal(4);
      const greedy = global.createBufferPool(1, UNBOUNDED);
      const held = requestAll(greedy, 4);
      const waiting = global.createBufferPool(1, UNBOUNDED);
      const log: string[] = [];
      const listener = new RecordingListener("L", log);
      expect(waiting.addBufferListener(listener)).toBe(true);
      must(held.pop()).recycleBuffer();
      await flush();
      expect(log).toEqual(["L"]);
      expect(must(listener.received[0]).getRecycler()).toBe(waiting);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(0);
      recycleAll(listener.received);
      recycleAll(held);
    });

    it("serves waiting listeners from the global pool when the pool grows", () => {
      const global = newGlobal(4);
      const pool = global.createBufferPool(1, 4);
      pool.setNumBuffers(1);
      const held = requestAll(pool, 1);
      const listener = new RecordingListener("L", []);
      expect(pool.addBufferListener(listener)).toBe(true);
      pool.setNumBuffers(2);
      expect(listener.received).toHaveLength(1);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(2);
      recycleAll(listener.received);
      recycleAll(held);
    });
  });

  describe("setNumBuffers", () => {
    it("returns free excess at once and in-use excess as it is recycled", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(1, 10);
      const buffers = requestAll(pool, 6);
      recycleAll(buffers.splice(0, 2));
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(2);
      pool.setNumBuffers(3);
      expect(pool.getNumBuffers()).toBe(3);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(0);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(6);
      expect(pool.isAvailable()).toBe(false);
      must(buffers.pop()).recycleBuffer();
      expect(global.getNumberOfAvailableMemorySegments()).toBe(7);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(0);
      expect(pool.isAvailable()).toBe(false);
      must(buffers.pop()).recycleBuffer();
      expect(global.getNumberOfAvailableMemorySegments()).toBe(7);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
      expect(pool.isAvailable()).toBe(true);
      recycleAll(buffers);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(3);
    });

    it("lets more requests through after growing, capped at the max", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(1, 5);
      pool.setNumBuffers(2);
      const buffers = requestAll(pool, 2);
      expect(pool.requestBuffer()).toBeUndefined();
      expect(pool.isAvailable()).toBe(false);
      pool.setNumBuffers(100);
      expect(pool.getNumBuffers()).toBe(5);
      expect(pool.isAvailable()).toBe(true);
      buffers.push(...requestAll(pool, 3));
      expect(pool.requestBuffer()).toBeUndefined();
      recycleAll(buffers);
    });

    it("refuses a size below the required count", () => {
      const global = newGlobal(10);
      const pool = global.createBufferPool(3, 5);
      expectError(() => pool.setNumBuffers(2), IllegalArgumentError, ErrorCodes.INVALID_ARGUMENT);
      expect(pool.getNumBuffers()).toBe(5);
    });
  });

  describe("destroy", () => {
    it("returns free segments at once and in-use segments when they are recycled", () => {
      const global = newGlobal(4);
      const pool = global.createBufferPool(1, 4);
      const buffers = requestAll(pool, 3);
      must(buffers.pop()).recycleBuffer();
      pool.destroy();
      expect(pool.isDestroyed()).toBe(true);
      expect(global.getNumberOfRegisteredBufferPools()).toBe(0);
      expect(global.getNumberOfAvailableMemorySegments()).toBe(2);
      must(buffers.pop()).recycleBuffer();
      expect(global.getNumberOfAvailableMemorySegments()).toBe(3);
      must(buffers.pop()).recycleBuffer();
      expect(global.getNumberOfAvailableMemorySegments()).toBe(4);
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(0);
      pool.destroy();
      expect(global.getNumberOfAvailableMemorySegments()).toBe(4);
    });

    it("throws BufferPoolDestroyedError on every request after destroy", () => {
      const global = newGlobal(4);
      const pool = global.createBufferPool(1, 4, { numberOfSubpartitions: 1, name: "rp-1" });
      pool.destroy();
      const error = expectError(
        () => pool.requestBuffer(),
        BufferPoolDestroyedError,
        ErrorCodes.BUFFER_POOL_DESTROYED,
      );
      expect(error.message).toContain("rp-1");
      expectError(
        () => pool.requestBufferBuilder(0),
        BufferPoolDestroyedError,
        ErrorCodes.BUFFER_POOL_DESTROYED,
      );
      expectError(
        () => pool.requestMemorySegment(),
        BufferPoolDestroyedError,
        ErrorCodes.BUFFER_POOL_DESTROYED,
      );
    });

    it("notifies registered listeners and refuses new ones", () => {
      const global = newGlobal(2);
      const pool = global.createBufferPool(2, 2);
      const buffers = requestAll(pool, 2);
      const listener = new RecordingListener("L", []);
      expect(pool.addBufferListener(listener)).toBe(true);
      pool.destroy();
      expect(listener.destroyedCalls).toBe(1);
      expect(pool.addBufferListener(listener)).toBe(false);
      recycleAll(buffers);
      // Recycled after destroy: to the global pool, never to the (removed) listener.
      expect(listener.received).toEqual([]);
      expect(listener.destroyedCalls).toBe(1);
    });

    it("wakes availability waiters on destroy", async () => {
      const global = newGlobal(2);
      const pool = global.createBufferPool(1, 1);
      const buffers = requestAll(pool, 1);
      const future = pool.getAvailableFuture();
      expect(await isSettled(future)).toBe(false);
      pool.destroy();
      expect(await isSettled(future)).toBe(true);
      recycleAll(buffers);
    });

    it("gives the destroyed pool's share to the remaining pools", () => {
      const global = newGlobal(10);
      const a = global.createBufferPool(1, UNBOUNDED);
      const b = global.createBufferPool(1, UNBOUNDED);
      expect(a.getNumBuffers()).toBe(5);
      b.destroy();
      expect(a.getNumBuffers()).toBe(10);
      const buffers = requestAll(a, 10);
      recycleAll(buffers);
    });
  });
});
