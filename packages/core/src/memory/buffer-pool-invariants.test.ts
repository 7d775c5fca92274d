import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IllegalArgumentError, InsufficientBuffersError } from "../errors.js";
import type { BufferBuilder } from "./buffer-builder.js";
import type { BufferConsumer } from "./buffer-consumer.js";
import type { BufferListener } from "./buffer-listener.js";
import type { LocalBufferPool } from "./local-buffer-pool.js";
import type { MemorySegment } from "./memory-segment.js";
import type { NetworkBuffer } from "./network-buffer.js";
import { NetworkBufferPool } from "./network-buffer-pool.js";
import "../testing/index.js";

const UNBOUNDED = Number.MAX_SAFE_INTEGER;
const SLOTS = 3;

type Op =
  | {
      kind: "create";
      slot: number;
      required: number;
      extra: number;
      overdraft: number;
      subpartitions: number;
      maxPerChannel: number;
    }
  | { kind: "destroy"; slot: number }
  | {
      kind: "request";
      slot: number;
      how: "buffer" | "sliced" | "builder" | "segment";
      channel: number;
    }
  | { kind: "recycle"; pick: number }
  | { kind: "setNumBuffers"; slot: number; size: number }
  | { kind: "unpooled"; count: number }
  | { kind: "recycleUnpooled"; pick: number }
  | { kind: "listen"; slot: number; keep: boolean }
  | { kind: "tick" };

const slotArb = fc.integer({ min: 0, max: SLOTS - 1 });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("create" as const),
      slot: slotArb,
      required: fc.integer({ min: 0, max: 6 }),
      extra: fc.oneof(fc.integer({ min: 0, max: 12 }), fc.constant(UNBOUNDED)),
      overdraft: fc.integer({ min: 0, max: 2 }),
      subpartitions: fc.integer({ min: 0, max: 3 }),
      maxPerChannel: fc.integer({ min: 1, max: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("destroy" as const), slot: slotArb }) },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant("request" as const),
      slot: slotArb,
      how: fc.constantFrom(
        "buffer" as const,
        "sliced" as const,
        "builder" as const,
        "segment" as const,
      ),
      channel: fc.integer({ min: -1, max: 2 }),
    }),
  },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant("recycle" as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("setNumBuffers" as const),
      slot: slotArb,
      size: fc.nat({ max: 20 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("unpooled" as const),
      count: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("recycleUnpooled" as const), pick: fc.nat() }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("listen" as const),
      slot: slotArb,
      keep: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("tick" as const) }) },
);

/** Something handed out by a pool that the test still holds. */
type Held =
  | { kind: "buffer"; pool: LocalBufferPool; segment: MemorySegment; buffer: NetworkBuffer }
  | {
      kind: "sliced";
      pool: LocalBufferPool;
      segment: MemorySegment;
      buffer: NetworkBuffer;
      slice: NetworkBuffer;
    }
  | {
      kind: "builder";
      pool: LocalBufferPool;
      segment: MemorySegment;
      channel: number;
      builder: BufferBuilder;
      consumer: BufferConsumer;
    }
  | { kind: "segment"; pool: LocalBufferPool; segment: MemorySegment; channel: number };

interface PoolInfo {
  pool: LocalBufferPool;
  maxOverdraft: number;
  subpartitions: number;
  maxPerChannel: number;
}

function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

class Harness {
  readonly global: NetworkBufferPool;
  readonly slots: Array<PoolInfo | undefined> = new Array(SLOTS).fill(undefined);
  readonly everCreated: PoolInfo[] = [];
  readonly held: Held[] = [];
  readonly unpooled: MemorySegment[][] = [];
  /** Every segment now out of all pools' hands (held buffers and unpooled segments). */
  readonly out = new Set<MemorySegment>();
  readonly seen = new Set<MemorySegment>();
  readonly listeners: Array<{ pool: LocalBufferPool; listener: BufferListener }> = [];
  /** Listeners the pool should still have registered (added, not yet dropped or destroyed). */
  readonly registered = new Map<LocalBufferPool, Set<BufferListener>>();
  readonly violations: string[] = [];
  /** Sizes were set by hand since the last redistribution: the sum bound does not apply. */
  manualSizes = false;

  constructor(readonly total: number) {
    this.global = new NetworkBufferPool(total, 64);
  }

  handOut(segment: MemorySegment, what: string): void {
    if (this.out.has(segment)) this.violations.push(`segment handed out twice (${what})`);
    if (segment.owner !== this.global) this.violations.push(`foreign segment (${what})`);
    this.out.add(segment);
    this.seen.add(segment);
  }

  /** Segments the pool took from the global pool within its size (free list + in use − overdraft). */
  requested(pool: LocalBufferPool): number {
    const inUse = this.held.filter((h) => h.pool === pool).length;
    return (
      inUse +
      pool.getNumberOfAvailableMemorySegments() -
      pool.getNumberOfRequestedOverdraftMemorySegments()
    );
  }

  unreserved(): number {
    let required = 0;
    for (const info of this.slots) required += info?.pool.getNumberOfRequiredMemorySegments() ?? 0;
    for (const list of this.unpooled) required += list.length;
    return this.total - required;
  }

  apply(op: Op): void {
    switch (op.kind) {
      case "create": {
        if (this.slots[op.slot] !== undefined) return;
        const max = op.extra === UNBOUNDED ? UNBOUNDED : op.required + op.extra;
        const expectFailure = op.required > this.unreserved();
        try {
          const pool = this.global.createBufferPool(op.required, max, {
            numberOfSubpartitions: op.subpartitions,
            maxBuffersPerChannel: op.maxPerChannel,
            maxOverdraftBuffersPerGate: op.overdraft,
          });
          if (expectFailure) this.violations.push("pool created beyond the unreserved segments");
          const info: PoolInfo = {
            pool,
            maxOverdraft: op.overdraft,
            subpartitions: op.subpartitions,
            maxPerChannel: op.maxPerChannel,
          };
          this.slots[op.slot] = info;
          this.everCreated.push(info);
          this.manualSizes = false;
        } catch (error) {
          if (!(error instanceof InsufficientBuffersError) || !expectFailure) throw error;
        }
        return;
      }
      case "destroy": {
        const info = this.slots[op.slot];
        if (info === undefined) return;
        info.pool.destroy();
        this.registered.delete(info.pool);
        this.slots[op.slot] = undefined;
        this.manualSizes = false;
        return;
      }
      case "request": {
        const info = this.slots[op.slot];
        if (info === undefined) return;
        const { pool } = info;
        const channel =
          op.channel < 0 || info.subpartitions === 0 ? -1 : op.channel % info.subpartitions;
        const free = pool.getNumberOfAvailableMemorySegments();
        const overdraft = pool.getNumberOfRequestedOverdraftMemorySegments();
        const requested = pool.bestEffortGetNumOfUsedBuffers() + free - overdraft;
        const globalFree = this.global.getNumberOfAvailableMemorySegments();
        const mustSucceed =
          free > 0 ||
          (globalFree > 0 && (requested < pool.getNumBuffers() || overdraft < info.maxOverdraft));
        let got = false;
        switch (op.how) {
          case "buffer":
          case "sliced": {
            const buffer = pool.requestBuffer();
            if (buffer === undefined) break;
            got = true;
            const segment = buffer.getMemorySegment();
            this.handOut(segment, "requestBuffer");
            if (op.how === "buffer") {
              this.held.push({ kind: "buffer", pool, segment, buffer });
            } else {
              buffer.setSize(8);
              const slice = buffer.readOnlySlice(2, 4).retainBuffer();
              this.held.push({ kind: "sliced", pool, segment, buffer, slice });
            }
            break;
          }
          case "builder": {
            const builder = pool.requestBufferBuilder(channel);
            if (builder === undefined) break;
            got = true;
            const consumer = builder.createBufferConsumer();
            builder.appendAndCommit(Uint8Array.of(1, 2, 3));
            const segment = consumer.build();
            const memorySegment = segment.getMemorySegment();
            segment.recycleBuffer();
            this.handOut(memorySegment, "requestBufferBuilder");
            this.held.push({
              kind: "builder",
              pool,
              segment: memorySegment,
              channel,
              builder,
              consumer,
            });
            break;
          }
          case "segment": {
            const segment = pool.requestMemorySegment(channel);
            if (segment === undefined) break;
            got = true;
            this.handOut(segment, "requestMemorySegment");
            this.held.push({ kind: "segment", pool, segment, channel });
            break;
          }
        }
        if (mustSucceed && !got) this.violations.push(`request failed with segments to spare`);
        if (got) {
          const overdraftAfter = pool.getNumberOfRequestedOverdraftMemorySegments();
          if (overdraftAfter > overdraft) {
            if (free > 0 || requested < pool.getNumBuffers()) {
              this.violations.push("overdraft taken while a normal segment could be had");
            }
          } else if (free === 0 && this.requested(pool) > pool.getNumBuffers()) {
            this.violations.push("pool grew past its size");
          }
        }
        return;
      }
      case "recycle": {
        if (this.held.length === 0) return;
        const [item] = this.held.splice(op.pick % this.held.length, 1);
        if (item === undefined) return;
        // Out of our hands before the last reference drops: the pool may hand it on at once.
        this.out.delete(item.segment);
        switch (item.kind) {
          case "buffer":
            item.buffer.recycleBuffer();
            break;
          case "sliced":
            item.slice.recycleBuffer();
            item.buffer.recycleBuffer();
            break;
          case "builder":
            item.builder.close();
            item.consumer.close();
            break;
          case "segment":
            item.pool.recycle(item.segment, item.channel);
            break;
        }
        return;
      }
      case "setNumBuffers": {
        const info = this.slots[op.slot];
        if (info === undefined) return;
        const { pool } = info;
        if (op.size < pool.getNumberOfRequiredMemorySegments()) {
          try {
            pool.setNumBuffers(op.size);
            this.violations.push("setNumBuffers accepted a size below required");
          } catch (error) {
            if (!(error instanceof IllegalArgumentError)) throw error;
          }
          return;
        }
        pool.setNumBuffers(op.size);
        this.manualSizes = true;
        return;
      }
      case "unpooled": {
        const unreservedBefore = this.unreserved();
        try {
          const segments = this.global.requestUnpooledMemorySegments(op.count);
          if (op.count > unreservedBefore) this.violations.push("unpooled beyond unreserved");
          for (const segment of segments) this.handOut(segment, "requestUnpooledMemorySegments");
          this.unpooled.push(segments);
          this.manualSizes = false;
        } catch (error) {
          if (!(error instanceof InsufficientBuffersError)) throw error;
          if (this.global.getNumberOfUnreservedSegments() !== unreservedBefore) {
            this.violations.push("failed unpooled request leaked its reservation");
          }
        }
        return;
      }
      case "recycleUnpooled": {
        if (this.unpooled.length === 0) return;
        const [segments] = this.unpooled.splice(op.pick % this.unpooled.length, 1);
        if (segments === undefined) return;
        for (const segment of segments) this.out.delete(segment);
        this.global.recycleUnpooledMemorySegments(segments);
        this.manualSizes = false;
        return;
      }
      case "listen": {
        const info = this.slots[op.slot];
        if (info === undefined) return;
        const { pool } = info;
        const listener: BufferListener = {
          notifyBufferAvailable: (buffer) => {
            const segment = buffer.getMemorySegment();
            this.handOut(segment, "listener");
            if (buffer.getRecycler() !== pool) this.violations.push("listener buffer not pooled");
            this.held.push({ kind: "buffer", pool, segment, buffer });
            if (!op.keep) this.registered.get(pool)?.delete(listener);
            return op.keep;
          },
          notifyBufferDestroyed: () => {},
        };
        if (pool.addBufferListener(listener)) {
          this.listeners.push({ pool, listener });
          const set = this.registered.get(pool) ?? new Set<BufferListener>();
          set.add(listener);
          this.registered.set(pool, set);
        }
        return;
      }
      case "tick":
        return;
    }
  }

  checkInvariants(afterTick = false): void {
    const broken = this.violations;
    const check = (ok: boolean, what: string): void => {
      if (!ok) broken.push(what);
    };
    const { global, total } = this;
    const globalFree = global.getNumberOfAvailableMemorySegments();
    let freeInPools = 0;
    for (const info of this.everCreated) {
      freeInPools += info.pool.getNumberOfAvailableMemorySegments();
    }
    check(
      globalFree + freeInPools + this.out.size === total,
      `segments not conserved: global ${globalFree} + pools ${freeInPools} + out ${this.out.size} != ${total}`,
    );
    check(global.isAvailable() === globalFree > 0, "global availability disagrees with its count");
    check(
      global.getNumberOfUnreservedSegments() === this.unreserved(),
      `unreserved ${global.getNumberOfUnreservedSegments()} != model ${this.unreserved()}`,
    );

    let sizes = 0;
    for (const [index, info] of this.everCreated.entries()) {
      const { pool } = info;
      const name = `pool#${index}`;
      const mine = this.held.filter((h) => h.pool === pool);
      const free = pool.getNumberOfAvailableMemorySegments();
      const overdraft = pool.getNumberOfRequestedOverdraftMemorySegments();
      check(pool.bestEffortGetNumOfUsedBuffers() === mine.length, `${name}: used count wrong`);
      check(overdraft <= info.maxOverdraft, `${name}: overdraft above its max`);
      let channelAtLimit = false;
      for (let channel = 0; channel < info.subpartitions; channel++) {
        let count = 0;
        for (const h of mine) {
          if ((h.kind === "builder" || h.kind === "segment") && h.channel === channel) count++;
        }
        check(
          pool.getNumberOfBuffersOfChannel(channel) === count,
          `${name}: channel ${channel} count`,
        );
        if (count >= info.maxPerChannel) channelAtLimit = true;
      }
      if (pool.isDestroyed()) {
        check(free === 0, `${name}: destroyed pool keeps free segments`);
        continue;
      }
      const size = pool.getNumBuffers();
      sizes += size;
      check(size >= pool.getNumberOfRequiredMemorySegments(), `${name}: size below required`);
      check(size <= pool.getMaxNumberOfMemorySegments(), `${name}: size above max`);
      const requested = mine.length + free - overdraft;
      const listening = (this.registered.get(pool)?.size ?? 0) > 0;
      // Recycled segments pay back overdraft and excess first, then feed listeners.
      if (free > 0) {
        check(overdraft === 0, `${name}: free segments while overdraft is out`);
        check(requested <= size, `${name}: free segments while over its size`);
        check(!listening, `${name}: free segments while a listener waits`);
        if (overdraft === 0 && !channelAtLimit) {
          check(pool.isAvailable(), `${name}: unavailable with free segments`);
        }
      }
      if (afterTick) {
        const canGrow = requested < size && globalFree > 0;
        // A waiting listener is served as soon as the global pool has a segment again...
        if (listening) check(!canGrow, `${name}: listener still waits while the pool can grow`);
        // ...and a pool that can grow says so.
        if (canGrow && overdraft === 0 && !channelAtLimit) {
          check(pool.isAvailable(), `${name}: unavailable though it can grow`);
        }
      }
    }
    if (!this.manualSizes) {
      const unpooled = this.unpooled.reduce((acc, list) => acc + list.length, 0);
      check(
        sizes <= total - unpooled,
        `pool sizes ${sizes} exceed ${total} - ${unpooled} unpooled`,
      );
    }
    expect(broken).toEqual([]);
  }

  async shutDown(): Promise<void> {
    await flush();
    this.checkInvariants(true);
    for (const { pool, listener } of this.listeners.splice(0)) pool.removeBufferListener(listener);
    this.registered.clear();
    while (this.held.length > 0) this.apply({ kind: "recycle", pick: 0 });
    while (this.unpooled.length > 0) this.apply({ kind: "recycleUnpooled", pick: 0 });
    await flush();
    this.checkInvariants();
    expect(this.out.size).toBe(0);
    for (const [slot, info] of this.slots.entries()) {
      info?.pool.destroy();
      this.slots[slot] = undefined;
    }
    this.global.destroy();
    expect(this.global).toHaveAllSegmentsAvailable();
    expect(this.seen.size).toBeLessThanOrEqual(this.total);
  }
}

describe("NetworkBufferPool and LocalBufferPools under random operations", () => {
  it("never exceed the total, never hand a segment out twice, and end with every segment home", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 16 }),
        fc.array(opArb, { minLength: 10, maxLength: 120, size: "max" }),
        async (total, ops) => {
          const harness = new Harness(total);
          for (const op of ops) {
            harness.apply(op);
            if (op.kind === "tick") await flush();
            harness.checkInvariants(op.kind === "tick");
          }
          await harness.shutDown();
        },
      ),
      { numRuns: 300 },
    );
  });
});
