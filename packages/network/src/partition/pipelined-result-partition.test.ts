import {
  EndOfData,
  ErrorCodes,
  EventSerializer,
  frameRecord,
  IllegalArgumentError,
  IllegalStateError,
  type LocalBufferPool,
  type NetworkBufferPool,
  RECORD_LENGTH_BYTES,
  RecordTooLargeError,
  StopMode,
} from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { buildPipelinedResultPartition, TestNetworkBufferPools } from "../testing/index.js";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { PipelinedResultPartition } from "./pipelined-result-partition.js";
import { ResultPartitionManager } from "./result-partition-manager.js";
import type { ResultSubpartitionView } from "./result-subpartition-view.js";

const SEGMENT = 64;

const NO_OP_LISTENER: BufferAvailabilityListener = { notifyDataAvailable: () => {} };

interface PartitionOptions {
  subpartitions?: number;
  segments?: number;
  required?: number;
  max?: number;
  maxBuffersPerChannel?: number;
  overdraft?: number;
  maxRecordSize?: number;
  minBufferSize?: number;
  segmentSize?: number;
  /** The segments are a SharedNetworkMemory's, as on a slot thread. */
  sharedMemory?: boolean;
}

interface Harness {
  readonly global: NetworkBufferPool;
  readonly partition: PipelinedResultPartition;
  readonly pool: LocalBufferPool;
  readonly views: ResultSubpartitionView[];
}

const pools = new TestNetworkBufferPools();

afterEach(() => {
  vi.useRealTimers();
  pools.destroyAll();
});

function setUp(options: PartitionOptions = {}): Harness {
  const subpartitions = options.subpartitions ?? 1;
  const global = (options.sharedMemory === true ? pools.createShared : pools.create).call(
    pools,
    options.segments ?? 256,
    options.segmentSize ?? SEGMENT,
  );
  const manager = new ResultPartitionManager();
  const partition = buildPipelinedResultPartition({
    networkBufferPool: global,
    partitionManager: manager,
    numberOfSubpartitions: subpartitions,
    ...(options.required === undefined ? {} : { requiredBuffers: options.required }),
    maxBuffers: options.max ?? 200,
    poolOptions: {
      maxOverdraftBuffersPerGate: options.overdraft ?? 0,
      ...(options.maxBuffersPerChannel === undefined
        ? {}
        : { maxBuffersPerChannel: options.maxBuffersPerChannel }),
    },
    ...(options.maxRecordSize === undefined ? {} : { maxRecordSize: options.maxRecordSize }),
    ...(options.minBufferSize === undefined ? {} : { minBufferSize: options.minBufferSize }),
  });
  const pool = partition.getBufferPool() as LocalBufferPool;
  const views = Array.from({ length: subpartitions }, (_, i) =>
    manager.createSubpartitionView(partition.partitionId, i, NO_OP_LISTENER),
  );
  return { global, partition, pool, views };
}

function record(length: number, seed = length): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (seed * 31 + i) & 0xff;
  return bytes;
}

/** The bytes a reader received from one subpartition, with data and events apart. */
class Sink {
  readonly chunks: Buffer[] = [];
  events = 0;
  buffers = 0;

  /** Takes everything the view has now, copies the bytes and recycles the buffers. */
  drain(view: ResultSubpartitionView): number {
    let taken = 0;
    for (let next = view.getNextBuffer(); next !== undefined; next = view.getNextBuffer()) {
      const { buffer } = next;
      if (buffer.isBuffer()) {
        this.chunks.push(Buffer.from(buffer.readableView()));
        this.buffers++;
      } else {
        this.events++;
      }
      buffer.recycleBuffer();
      taken++;
    }
    return taken;
  }

  /** Splits the received stream into length-prefixed records; fails on a truncated stream. */
  records(): Buffer[] {
    const stream = Buffer.concat(this.chunks);
    const out: Buffer[] = [];
    let at = 0;
    while (at < stream.length) {
      expect(stream.length - at).toBeGreaterThanOrEqual(RECORD_LENGTH_BYTES);
      const length = stream.readInt32BE(at);
      at += RECORD_LENGTH_BYTES;
      expect(length).toBeGreaterThanOrEqual(0);
      expect(stream.length - at).toBeGreaterThanOrEqual(length);
      out.push(stream.subarray(at, at + length));
      at += length;
    }
    return out;
  }
}

function expectRecords(actual: Buffer[], expected: Uint8Array[]): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((bytes, i) => {
    expect(Buffer.compare(bytes, Buffer.from(expected[i] as Uint8Array))).toBe(0);
  });
}

function expectAllSegmentsBack(global: NetworkBufferPool): void {
  expect(global).toHaveAllSegmentsAvailable();
}

/** Finishes the partition, drains every view into its sink and releases everything. */
function finishAndDrain(h: Harness, sinks: Sink[]): void {
  h.partition.finish();
  h.views.forEach((view, i) => {
    (sinks[i] as Sink).drain(view);
    view.releaseAllResources();
  });
  h.partition.close();
}

describe("ResultPartition records", () => {
  it("delivers records spanning several buffers intact (unicast)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 2 })), {
          maxLength: 30,
        }),
        (plan) => {
          const h = setUp({ subpartitions: 3, segments: 400, max: 400 });
          const expected: Uint8Array[][] = [[], [], []];
          plan.forEach(([size, target], i) => {
            const bytes = record(size, i);
            h.partition.emitRecord(frameRecord(bytes), target);
            expected[target]?.push(bytes);
          });
          const sinks = [new Sink(), new Sink(), new Sink()];
          finishAndDrain(h, sinks);
          sinks.forEach((sink, i) => {
            expectRecords(sink.records(), expected[i] as Uint8Array[]);
            expect(sink.events).toBe(1); // EndOfPartition
          });
          expect(h.partition.isReleased()).toBe(true); // released on consumption
          expectAllSegmentsBack(h.global);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("delivers records spanning several buffers intact (broadcast, mixed with unicast)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: -1, max: 1 })), {
          maxLength: 30,
        }),
        (plan) => {
          const h = setUp({ subpartitions: 2, segments: 400, max: 400 });
          const expected: Uint8Array[][] = [[], []];
          plan.forEach(([size, target], i) => {
            const bytes = record(size, i);
            if (target < 0) {
              h.partition.broadcastRecord(frameRecord(bytes));
              for (const list of expected) list.push(bytes);
            } else {
              h.partition.emitRecord(frameRecord(bytes), target);
              expected[target]?.push(bytes);
            }
          });
          const sinks = [new Sink(), new Sink()];
          finishAndDrain(h, sinks);
          sinks.forEach((sink, i) => {
            expectRecords(sink.records(), expected[i] as Uint8Array[]);
          });
          expectAllSegmentsBack(h.global);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("writes a broadcast record once: every subpartition reads the same segment", () => {
    const h = setUp({ subpartitions: 4 });
    h.partition.broadcastRecord(frameRecord(record(20)));
    expect(h.pool.bestEffortGetNumOfUsedBuffers()).toBe(1);
    expect(h.global.getNumberOfUsedMemorySegments()).toBe(1);
    h.partition.flushAll();
    const taken = h.views.map((view) => view.getNextBuffer());
    const segments = new Set(taken.map((t) => t?.buffer.getMemorySegment()));
    expect(segments.size).toBe(1);
    for (const t of taken) {
      expect(t?.buffer.getSize()).toBe(24);
      t?.buffer.recycleBuffer();
    }

    // The same record sent to each subpartition on its own takes one buffer per subpartition.
    for (let i = 0; i < 4; i++) h.partition.emitRecord(frameRecord(record(20)), i);
    expect(h.global.getNumberOfUsedMemorySegments()).toBe(5); // 4 unicast + the open broadcast one
    h.partition.release();
    expectAllSegmentsBack(h.global);
  });

  it("completes a record that ran out of buffers once buffers are recycled; emitting before that throws", async () => {
    const h = setUp({ required: 2, max: 2 });
    const big = record(200); // 204 bytes: four 64-byte buffers
    h.partition.emitRecord(frameRecord(big), 0);
    expect(h.partition.isAvailable()).toBe(false);
    expectError(
      () => h.partition.emitRecord(frameRecord(record(1)), 0),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
    expectError(
      () => h.partition.broadcastRecord(frameRecord(record(1))),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
    expectError(() => h.partition.finish(), IllegalStateError, ErrorCodes.ILLEGAL_STATE);

    const sink = new Sink();
    expect(sink.drain(h.views[0] as ResultSubpartitionView)).toBe(2);
    // The waiting record completes with the recycled buffers (filling the pool again).
    await h.partition.getAvailableFuture();
    expect(h.pool.bestEffortGetNumOfUsedBuffers()).toBe(2);
    sink.drain(h.views[0] as ResultSubpartitionView);
    expect(h.partition.isAvailable()).toBe(true);
    h.partition.emitRecord(frameRecord(record(5)), 0);
    finishAndDrain(h, [sink]);
    expectRecords(sink.records(), [big, record(5)]);
    expectAllSegmentsBack(h.global);
  });

  it("drops a record still waiting for buffers when the partition fails or closes, without stray errors", async () => {
    for (const end of ["fail", "close"] as const) {
      const h = setUp({ required: 2, max: 2 });
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on("unhandledRejection", onUnhandled);
      try {
        h.partition.emitRecord(frameRecord(record(200)), 0);
        expect(h.partition.isAvailable()).toBe(false);
        const waiting = h.partition.getAvailableFuture();
        if (end === "fail") h.partition.fail(new Error("cancelled"));
        else h.partition.close();
        new Sink().drain(h.views[0] as ResultSubpartitionView);
        for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
        expect(unhandled).toEqual([]);
        await waiting; // a waiting writer wakes up
      } finally {
        process.off("unhandledRejection", onUnhandled);
      }
      h.partition.release();
      expectAllSegmentsBack(h.global);
    }
  });

  it("writes a length prefix split across buffers exactly once when the pool runs dry mid-prefix", async () => {
    const h = setUp({ required: 2, max: 2 });
    const first = record(SEGMENT - 4, 1); // fills buffer 1 exactly
    const second = record(SEGMENT - 6, 2); // buffer 2 keeps 2 free bytes
    const third = record(20, 3); // its length prefix straddles buffers 2 and 3
    h.partition.emitRecord(frameRecord(first), 0);
    h.partition.emitRecord(frameRecord(second), 0);
    // The pool is exhausted now; a writer may still emit (the record waits for buffers).
    expect(h.partition.isAvailable()).toBe(false);
    h.partition.emitRecord(frameRecord(third), 0);

    const sink = new Sink();
    sink.drain(h.views[0] as ResultSubpartitionView);
    await h.partition.getAvailableFuture();
    finishAndDrain(h, [sink]);
    expectRecords(sink.records(), [first, second, third]);
    expectAllSegmentsBack(h.global);
  });

  it("writes a broadcast length prefix split across buffers exactly once when the pool runs dry", async () => {
    const h = setUp({ subpartitions: 2, required: 2, max: 2 });
    const first = record(SEGMENT - 4, 1);
    const second = record(SEGMENT - 7, 2); // 3 bytes left in buffer 2
    const third = record(30, 3);
    h.partition.broadcastRecord(frameRecord(first));
    h.partition.broadcastRecord(frameRecord(second));
    h.partition.broadcastRecord(frameRecord(third));
    const sinks = [new Sink(), new Sink()];
    h.views.forEach((view, i) => {
      (sinks[i] as Sink).drain(view);
    });
    await h.partition.getAvailableFuture();
    finishAndDrain(h, sinks);
    for (const sink of sinks) expectRecords(sink.records(), [first, second, third]);
    expectAllSegmentsBack(h.global);
  });

  it("delivers every record intact through a small pool that keeps running dry", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 2, max: 4 }),
        async (sizes, poolSize) => {
          const h = setUp({ segments: 8, required: poolSize, max: poolSize });
          const view = h.views[0] as ResultSubpartitionView;
          const sink = new Sink();
          const expected: Uint8Array[] = [];
          // Drain on every turn while blocked: a record waiting for buffers may need several.
          const waitUntilAvailable = async () => {
            while (!h.partition.isAvailable()) {
              sink.drain(view);
              await new Promise((resolve) => setImmediate(resolve));
            }
          };
          for (const [i, size] of sizes.entries()) {
            await waitUntilAvailable();
            const bytes = record(size, i);
            expected.push(bytes);
            h.partition.emitRecord(frameRecord(bytes), 0);
            expect(h.pool.bestEffortGetNumOfUsedBuffers()).toBeLessThanOrEqual(poolSize);
          }
          await waitUntilAvailable();
          finishAndDrain(h, [sink]);
          expectRecords(sink.records(), expected);
          expectAllSegmentsBack(h.global);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe("ResultPartition on shared network memory", () => {
  it("names where each subpartition's next record lands modulo 8, so a writer can match it; nothing on ordinary memory", () => {
    expect(setUp({ subpartitions: 2 }).partition.getRecordAlignment()).toBeUndefined();
    const h = setUp({ subpartitions: 2, sharedMemory: true });
    const alignment = h.partition.getRecordAlignment();
    if (alignment === undefined) throw new Error("no record alignment on shared memory");
    expect([alignment(0), alignment(1)]).toEqual([0, 0]);
    h.partition.emitRecord(frameRecord(record(9)), 0); // 13 bytes framed
    h.partition.emitRecord(frameRecord(record(1)), 1); // 5
    h.partition.emitRecord(frameRecord(record(3)), 1); // 7
    expect([alignment(0), alignment(1)]).toEqual([5, 4]);
    // The rest of subpartition 0's buffer: its next record starts a new one.
    h.partition.emitRecord(frameRecord(record(SEGMENT - 13 - RECORD_LENGTH_BYTES)), 0);
    expect(alignment(0)).toBe(0);
    const sinks = [new Sink(), new Sink()];
    finishAndDrain(h, sinks);
    expectRecords(sinks[0]?.records() ?? [], [
      record(9),
      record(SEGMENT - 13 - RECORD_LENGTH_BYTES),
    ]);
    expectRecords(sinks[1]?.records() ?? [], [record(1), record(3)]);
    expectAllSegmentsBack(h.global);
  });
});

describe("ResultPartition writers that ignore availability", () => {
  it("delivers every record intact when a writer emits until a record has to wait", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 150 }), fc.boolean()), {
          minLength: 1,
          maxLength: 40,
        }),
        // At least subpartitions + 1 buffers (Flink's minimum): each subpartition may hold an
        // open buffer, and one more is needed to make progress.
        fc.integer({ min: 3, max: 5 }),
        fc.integer({ min: 0, max: 2 }),
        async (plan, poolSize, overdraft) => {
          const h = setUp({
            subpartitions: 2,
            segments: 12,
            required: poolSize,
            max: poolSize,
            overdraft,
          });
          const sinks = [new Sink(), new Sink()];
          const expected: Uint8Array[][] = [[], []];
          const drainAll = () => {
            h.views.forEach((view, i) => {
              (sinks[i] as Sink).drain(view);
            });
          };
          for (const [i, [size, broadcast]] of plan.entries()) {
            const bytes = record(size, i);
            const target = i % 2;
            // Emit regardless of availability (the writer contract allows it); only a record
            // that still waits for buffers makes the next emit throw.
            for (;;) {
              try {
                if (broadcast) h.partition.broadcastRecord(frameRecord(bytes));
                else h.partition.emitRecord(frameRecord(bytes), target);
                break;
              } catch (error) {
                expect(error).toBeInstanceOf(IllegalStateError);
                drainAll();
                await new Promise((resolve) => setImmediate(resolve));
              }
            }
            if (broadcast) for (const list of expected) list.push(bytes);
            else expected[target]?.push(bytes);
          }
          while (!h.partition.isAvailable()) {
            drainAll();
            await new Promise((resolve) => setImmediate(resolve));
          }
          finishAndDrain(h, sinks);
          sinks.forEach((sink, i) => {
            expectRecords(sink.records(), expected[i] as Uint8Array[]);
          });
          expectAllSegmentsBack(h.global);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe("ResultPartition availability", () => {
  it("becomes unavailable once one subpartition holds max-buffers-per-channel buffers", async () => {
    const h = setUp({ subpartitions: 2, maxBuffersPerChannel: 3, max: 50 });
    h.partition.emitRecord(frameRecord(record(SEGMENT - 4, 1)), 0);
    h.partition.emitRecord(frameRecord(record(SEGMENT - 4, 2)), 0);
    h.partition.emitRecord(frameRecord(record(SEGMENT - 4, 3)), 1);
    expect(h.partition.isAvailable()).toBe(true);
    h.partition.emitRecord(frameRecord(record(SEGMENT - 4, 4)), 0);
    expect(h.pool.getNumberOfBuffersOfChannel(0)).toBe(3);
    expect(h.partition.isAvailable()).toBe(false);
    let resolved = false;
    void h.partition.getAvailableFuture().then(() => {
      resolved = true;
    });
    // The pool itself still has plenty of buffers: the limit is per channel.
    expect(
      h.pool.getNumberOfAvailableMemorySegments() + h.global.getNumberOfAvailableMemorySegments(),
    ).toBeGreaterThan(10);
    await Promise.resolve();
    expect(resolved).toBe(false);

    const view = h.views[0] as ResultSubpartitionView;
    const one = view.getNextBuffer();
    one?.buffer.recycleBuffer();
    await h.partition.getAvailableFuture();
    expect(resolved).toBe(true);
    expect(h.partition.isAvailable()).toBe(true);
    h.partition.release();
    expectAllSegmentsBack(h.global);
  });

  it("lets a big record finish in overdraft buffers and stays unavailable until they return", () => {
    const h = setUp({ required: 2, max: 2, overdraft: 3 });
    const big = record(200); // four buffers: two normal, two overdraft
    h.partition.emitRecord(frameRecord(big), 0);
    expect(h.pool.getNumberOfRequestedOverdraftMemorySegments()).toBe(2);
    expect(h.partition.isAvailable()).toBe(false);
    const sink = new Sink();
    sink.drain(h.views[0] as ResultSubpartitionView);
    expect(h.pool.getNumberOfRequestedOverdraftMemorySegments()).toBe(0);
    expect(h.partition.isAvailable()).toBe(true);
    finishAndDrain(h, [sink]);
    expectRecords(sink.records(), [big]);
    expectAllSegmentsBack(h.global);
  });

  it("clamps a consumer's NewBufferSize to the minimum buffer size instead of sending tiny buffers", () => {
    const h = setUp({ minBufferSize: 32 });
    // A consumer (or a hostile peer) asks for one-byte buffers.
    (h.views[0] as ResultSubpartitionView).notifyNewBufferSize(1);
    const records = Array.from({ length: 10 }, (_, i) => record(4, i)); // 8 bytes each on the wire
    for (const r of records) h.partition.emitRecord(frameRecord(r), 0);
    const sink = new Sink();
    finishAndDrain(h, [sink]);
    expect(sink.chunks.map((c) => c.length)).toEqual([32, 32, 16]);
    expectRecords(sink.records(), records);
    expectAllSegmentsBack(h.global);
  });

  it("rejects a record above the maximum record size with RecordTooLargeError, writing nothing", () => {
    const h = setUp({ maxRecordSize: 100 });
    const error = expectError(
      () => h.partition.emitRecord(frameRecord(record(101)), 0),
      RecordTooLargeError,
      ErrorCodes.RECORD_TOO_LARGE,
    );
    expect(error.message).toContain("101");
    expectError(
      () => h.partition.broadcastRecord(frameRecord(record(101))),
      RecordTooLargeError,
      ErrorCodes.RECORD_TOO_LARGE,
    );
    expect(h.global.getNumberOfUsedMemorySegments()).toBe(0);
    h.partition.emitRecord(frameRecord(record(100)), 0); // the limit itself is fine
    const sink = new Sink();
    finishAndDrain(h, [sink]);
    expectRecords(sink.records(), [record(100)]);
    expectAllSegmentsBack(h.global);
  });
});

/**
 * Drains every view, as readers woken by the data would, until the partition takes records
 * again: a record resumed after waiting may fill another buffer and wait for that one too.
 */
async function drainUntilAvailable(h: Harness, sinks: Sink[]): Promise<void> {
  for (let turn = 0; !h.partition.isAvailable(); turn++) {
    if (turn > 10_000) throw new Error(`the partition never turned available: ${h.pool}`);
    h.views.forEach((view, s) => {
      (sinks[s] as Sink).drain(view);
    });
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("ResultPartition records in two parts (emitRecordParts)", () => {
  /**
   * What one subpartition's reader receives when `emit` writes into a partition of two 64-byte
   * buffers (so a record of a few buffers runs the pool dry and waits), after a filler record
   * that leaves `fill` bytes of a buffer used: each buffer's bytes, in order.
   */
  async function received(
    fill: number,
    emit: (partition: PipelinedResultPartition) => void,
  ): Promise<string[]> {
    const h = setUp({ segments: 4, required: 2, max: 2 });
    const sink = new Sink();
    // Framed, the filler takes one buffer plus `fill` bytes of the next.
    h.partition.emitRecord(frameRecord(record(SEGMENT + fill - RECORD_LENGTH_BYTES, 99)), 0);
    emit(h.partition);
    await drainUntilAvailable(h, [sink]);
    finishAndDrain(h, [sink]);
    expectAllSegmentsBack(h.global);
    return sink.chunks.map((chunk) => chunk.toString("hex"));
  }

  it("writes the same buffers as for the record whole, wherever buffer boundaries and the pool running dry fall", async () => {
    // 150 bytes framed: three buffers or more, so the two-buffer pool runs dry inside it.
    const framed = frameRecord(record(146, 5));
    for (let fill = 0; fill < SEGMENT; fill++) {
      const whole = await received(fill, (partition) => partition.emitRecord(framed, 0));
      for (let cut = 0; cut <= framed.length; cut++) {
        const parts = await received(fill, (partition) =>
          partition.emitRecordParts(framed.subarray(0, cut), framed.subarray(cut), 0),
        );
        if (parts.join() !== whole.join()) {
          expect({ fill, cut, parts }).toEqual({ fill, cut, parts: whole });
        }
      }
    }
  });

  it("keeps its own copy of what waits for buffers: the caller may change its bytes once the call returns", async () => {
    const h = setUp({ required: 2, max: 2 });
    const payload = record(300, 3);
    const framed = frameRecord(payload);
    const head = Uint8Array.from(framed.subarray(0, 8));
    const tail = Uint8Array.from(framed.subarray(8));
    h.partition.emitRecordParts(head, tail, 0);
    expect(h.partition.isAvailable()).toBe(false);
    head.fill(0xee);
    tail.fill(0xee);
    const sink = new Sink();
    await drainUntilAvailable(h, [sink]);
    finishAndDrain(h, [sink]);
    expectRecords(sink.records(), [payload]);
    expectAllSegmentsBack(h.global);
  });

  it("checks a record in two parts as a whole record: its size, a record still waiting, the subpartition", () => {
    const h = setUp({ required: 2, max: 2, maxRecordSize: 100 });
    const tooLarge = frameRecord(record(101));
    const error = expectError(
      () => h.partition.emitRecordParts(tooLarge.subarray(0, 50), tooLarge.subarray(50), 0),
      RecordTooLargeError,
      ErrorCodes.RECORD_TOO_LARGE,
    );
    expect(error.message).toContain("record of 101 bytes");
    expect(h.global.getNumberOfUsedMemorySegments()).toBe(0);
    const fits = frameRecord(record(100));
    expectError(
      () => h.partition.emitRecordParts(fits.subarray(0, 4), fits.subarray(4), 1),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
    );
    h.partition.emitRecord(fits, 0);
    h.partition.emitRecord(fits, 0); // runs the two buffers dry: a record waits
    expectError(
      () => h.partition.emitRecordParts(fits.subarray(0, 4), fits.subarray(4), 0),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
    h.partition.release();
    expectAllSegmentsBack(h.global);
  });

  it("ends an open broadcast buffer first, as a whole unicast record does, so records stay in order", () => {
    const h = setUp({ subpartitions: 2 });
    const before = record(10, 1);
    const mine = record(200, 2);
    const after = record(10, 3);
    const framed = frameRecord(mine);
    h.partition.broadcastRecord(frameRecord(before));
    h.partition.emitRecordParts(framed.subarray(0, 4), framed.subarray(4), 1);
    h.partition.broadcastRecord(frameRecord(after));
    const sinks = [new Sink(), new Sink()];
    finishAndDrain(h, sinks);
    expectRecords((sinks[0] as Sink).records(), [before, after]);
    expectRecords((sinks[1] as Sink).records(), [before, mine, after]);
    expectAllSegmentsBack(h.global);
  });

  it("joins the parts into the shared segments of a pool with fewer buffers than subpartitions", async () => {
    const h = setUp({ subpartitions: 8, segmentSize: 256, segments: 4, required: 4, max: 4 });
    const sinks = h.views.map(() => new Sink());
    const expected: Uint8Array[][] = sinks.map(() => []);
    for (let i = 0; i < 40; i++) {
      const payload = record(50 + 37 * i, i);
      const framed = frameRecord(payload);
      const target = (i * 5) % 8;
      (expected[target] as Uint8Array[]).push(payload);
      h.partition.emitRecordParts(framed.subarray(0, 4), framed.subarray(4), target);
      await drainUntilAvailable(h, sinks);
    }
    finishAndDrain(h, sinks);
    sinks.forEach((sink, s) => {
      expectRecords(sink.records(), expected[s] as Uint8Array[]);
    });
    expectAllSegmentsBack(h.global);
  });
});

// Cases after Flink's ResultPartitionTest for buffer debloating (its facts, not its code): a new
// buffer is trimmed to the consumer's size but never below what is left of the record, a
// broadcast buffer to the smallest size of its consumers, and a full debloated buffer grows
// back when the pool has nothing left rather than leaving the record waiting.
describe("ResultPartition buffer debloating", () => {
  const view = (h: Harness, i = 0) => h.views[i] as ResultSubpartitionView;

  it("testBufferSizeGreaterOrEqualToFirstRecord: a record that fits a segment starts a buffer it fits, never split over debloated buffers", () => {
    const h = setUp();
    view(h).notifyNewBufferSize(16);
    const first = record(40); // 44 bytes on the wire: more than 16, less than a segment
    const second = record(4); // 8 bytes: the debloated size applies again
    h.partition.emitRecord(frameRecord(first), 0);
    h.partition.emitRecord(frameRecord(second), 0);
    const sink = new Sink();
    finishAndDrain(h, [sink]);
    expect(sink.chunks.map((c) => c.length)).toEqual([44, 8]);
    expectRecords(sink.records(), [first, second]);
    expectAllSegmentsBack(h.global);
  });

  it("fills whole segments with a record larger than one, whatever the debloated size", () => {
    const h = setUp();
    view(h).notifyNewBufferSize(16);
    const big = record(150); // 154 bytes: two full segments and 26 bytes
    h.partition.emitRecord(frameRecord(big), 0);
    const sink = new Sink();
    finishAndDrain(h, [sink]);
    expect(sink.chunks.map((c) => c.length)).toEqual([SEGMENT, SEGMENT, 26]);
    expectRecords(sink.records(), [big]);
    expectAllSegmentsBack(h.global);
  });

  it("testDynamicBufferSizeForBroadcast: trims a broadcast buffer to the smallest size its consumers asked for, never below the record", () => {
    const h = setUp({ subpartitions: 2 });
    view(h, 0).notifyNewBufferSize(16);
    view(h, 1).notifyNewBufferSize(32);
    const small = [record(4, 1), record(4, 2), record(4, 3)]; // 8 bytes each
    const large = record(40); // 44 bytes: 8 of them in the second buffer, 36 in a third
    for (const r of small) h.partition.broadcastRecord(frameRecord(r));
    h.partition.broadcastRecord(frameRecord(large));
    const sinks = [new Sink(), new Sink()];
    finishAndDrain(h, sinks);
    for (const sink of sinks) {
      expect(sink.chunks.map((c) => c.length)).toEqual([16, 16, 36]);
      expectRecords(sink.records(), [...small, large]);
    }
    expectAllSegmentsBack(h.global);
  });

  it("grows a full debloated buffer back to its segment instead of leaving a record waiting when the pool is dry", () => {
    // One buffer in all: once it is taken the pool has none to give.
    const h = setUp({ required: 1, max: 1 });
    view(h).notifyNewBufferSize(16);
    const first = record(4); // 8 bytes in a buffer trimmed to 16
    const second = record(20); // 24 bytes: 8 fit, the rest would need another buffer
    h.partition.emitRecord(frameRecord(first), 0);
    h.partition.emitRecord(frameRecord(second), 0);
    expect(h.partition.hasPendingRecord()).toBe(false);
    expect(h.pool.bestEffortGetNumOfUsedBuffers()).toBe(1);
    const sink = new Sink();
    finishAndDrain(h, [sink]);
    expect(sink.chunks.map((c) => c.length)).toEqual([32]);
    expectRecords(sink.records(), [first, second]);
    expectAllSegmentsBack(h.global);
  });
});

describe("ResultPartition metrics", () => {
  it("counts bytes and buffers of finished buffers (broadcast once per subpartition)", () => {
    const h = setUp({ subpartitions: 2 });
    const m = h.partition.metrics;
    h.partition.emitRecord(frameRecord(record(SEGMENT - 4)), 0);
    h.partition.emitRecord(frameRecord(record(SEGMENT - 4)), 1);
    expect([m.numBuffersOut, m.numBytesOut]).toEqual([2, 2 * SEGMENT]);
    h.partition.emitRecord(frameRecord(record(10)), 0);
    h.partition.flushAll(); // a flushed, unfinished buffer is not counted yet
    expect([m.numBuffersOut, m.numBytesOut]).toEqual([2, 2 * SEGMENT]);
    h.partition.broadcastRecord(frameRecord(record(20))); // finishes the open unicast buffer first
    expect([m.numBuffersOut, m.numBytesOut]).toEqual([3, 2 * SEGMENT + 14]);
    h.partition.finish();
    expect([m.numBuffersOut, m.numBytesOut]).toEqual([5, 2 * SEGMENT + 14 + 2 * 24]);
    expect(h.partition.metrics.outPoolUsage()).toBeGreaterThan(0);
    const sinks = [new Sink(), new Sink()];
    h.views.forEach((view, i) => {
      (sinks[i] as Sink).drain(view);
      view.releaseAllResources();
    });
    h.partition.close();
    expect(m.numBuffersOut).toBe(5); // readable after release
    expectAllSegmentsBack(h.global);
  });

  it("measures back-pressured time only while the writer is blocked", async () => {
    vi.useFakeTimers({ toFake: ["Date", "setTimeout", "setImmediate"] });
    const h = setUp({ required: 2, max: 2 });
    const m = h.partition.metrics;
    h.partition.emitRecord(frameRecord(record(SEGMENT - 4, 1)), 0);
    vi.advanceTimersByTime(1000); // available: no back-pressure yet
    expect(m.backPressuredTimeMs).toBe(0);
    h.partition.emitRecord(frameRecord(record(SEGMENT - 4, 2)), 0);
    expect(h.partition.isAvailable()).toBe(false);
    const future = h.partition.getAvailableFuture();
    vi.advanceTimersByTime(250);
    expect(m.backPressuredTimeMs).toBe(250);
    vi.advanceTimersByTime(250);
    expect(m.backPressuredTimeMs).toBe(500);

    const sink = new Sink();
    sink.drain(h.views[0] as ResultSubpartitionView);
    await future;
    await Promise.resolve();
    expect(h.partition.isAvailable()).toBe(true);
    vi.advanceTimersByTime(1000);
    expect(m.backPressuredTimeMs).toBe(500);

    // A second episode adds up.
    h.partition.emitRecord(frameRecord(record(SEGMENT - 4, 3)), 0);
    h.partition.emitRecord(frameRecord(record(SEGMENT - 4, 4)), 0);
    const again = h.partition.getAvailableFuture();
    vi.advanceTimersByTime(100);
    sink.drain(h.views[0] as ResultSubpartitionView);
    await again;
    await Promise.resolve();
    expect(m.backPressuredTimeMs).toBe(600);
    finishAndDrain(h, [sink]);
    expect(sink.records()).toHaveLength(4);
    expectAllSegmentsBack(h.global);
  });
});

describe("ResultPartition recovered output state", () => {
  it("re-emits recovered bytes as they are, before new records, waiting for buffers", async () => {
    // Two buffers of 64 bytes for 150 recovered bytes: the tail waits like a pending record.
    const h = setUp({ required: 2, max: 2 });
    const head = record(30, 1);
    const tail = record(20, 2);
    // A recovered stream may start inside a record: the rest of `head`, then all of `tail`.
    const recovered = new Uint8Array(150);
    const framed = Buffer.alloc(4 + tail.length);
    framed.writeInt32BE(tail.length, 0);
    framed.set(tail, 4);
    recovered.set(head.subarray(10), 0);
    recovered.set(framed, 20);
    const filler = Buffer.alloc(150 - 20 - framed.length);
    recovered.set(filler, 20 + framed.length);
    h.partition.addRecoveredState(0, recovered);
    expect(h.partition.hasPendingRecord()).toBe(true);
    expect(h.partition.isAvailable()).toBe(false);
    expectError(
      () => h.partition.addRecoveredState(0, recovered),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
      "waits for buffers",
    );
    const sink = new Sink();
    while (h.partition.hasPendingRecord()) {
      h.partition.flushAll();
      sink.drain(h.views[0] as ResultSubpartitionView);
      await h.partition.getAvailableFuture();
    }
    h.partition.emitRecord(frameRecord(record(5, 3)), 0);
    h.partition.finish();
    sink.drain(h.views[0] as ResultSubpartitionView);
    const stream = Buffer.concat(sink.chunks);
    expect(stream.subarray(0, 150).equals(Buffer.from(recovered))).toBe(true);
    expect(stream.readInt32BE(150)).toBe(5);
    expect(stream.length).toBe(150 + 4 + 5);
    h.partition.close();
    expectAllSegmentsBack(h.global);
  });

  it("rejects recovered state for a subpartition it does not have", () => {
    const h = setUp();
    expectError(
      () => h.partition.addRecoveredState(3, new Uint8Array(1)),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
      "recovered state for subpartition 3 out of [0, 1)",
    );
    h.partition.release();
    h.partition.close();
  });
});

describe("a pool with fewer buffers than subpartitions (the fallback when network memory is short)", () => {
  /** Emits `total` small records spread over every subpartition, draining when back-pressured. */
  async function emitSpread(h: Harness, sinks: Sink[], total: number): Promise<Uint8Array[][]> {
    const expected: Uint8Array[][] = sinks.map(() => []);
    for (let i = 0; i < total; i++) {
      const target = (i * 7919) % sinks.length;
      const payload = record(4 + (i % 5), i);
      (expected[target] as Uint8Array[]).push(payload);
      h.partition.emitRecord(frameRecord(payload), target);
      await drainUntilAvailable(h, sinks);
    }
    return expected;
  }

  it("packs the records of many subpartitions into each segment instead of a record or two per buffer", async () => {
    const subpartitions = 64;
    const h = setUp({ subpartitions, segmentSize: 4096, segments: 8, required: 8, max: 8 });
    const sinks = h.views.map(() => new Sink());
    const total = 20_000;
    const expected = await emitSpread(h, sinks, total);
    finishAndDrain(h, sinks);
    sinks.forEach((sink, s) => {
      expectRecords(sink.records(), expected[s] as Uint8Array[]);
    });
    // Framed records of 8-12 bytes: a 4 KiB segment carries hundreds of them over its slices.
    // One buffer per subpartition being written would finish buffers of one or two records.
    expect(h.partition.metrics.numBuffersOut).toBeLessThan(total / 5);
    expectAllSegmentsBack(h.global);
  });

  it("hands out what was written on flush, and records longer than a segment intact", async () => {
    const h = setUp({ subpartitions: 16, segmentSize: 256, segments: 4, required: 4, max: 4 });
    const sinks = h.views.map(() => new Sink());
    const small = record(10, 1);
    h.partition.emitRecord(frameRecord(small), 3);
    expect(sinks[3]?.drain(h.views[3] as ResultSubpartitionView)).toBe(0);
    h.partition.flushAll();
    expect(sinks[3]?.drain(h.views[3] as ResultSubpartitionView)).toBe(1);
    const large = record(1000, 2);
    h.partition.emitRecord(frameRecord(large), 5);
    await drainUntilAvailable(h, sinks);
    finishAndDrain(h, sinks);
    expectRecords((sinks[3] as Sink).records(), [small]);
    expectRecords((sinks[5] as Sink).records(), [large]);
    expectAllSegmentsBack(h.global);
  });

  it("delivers unicast and broadcast records intact and in order, whatever the pool and the flushes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 24 }),
        fc.integer({ min: 1, max: 6 }),
        fc.array(
          fc.tuple(
            fc.constantFrom("unicast", "unicast", "unicast", "broadcast", "flush"),
            fc.integer({ min: 0, max: 600 }),
            fc.nat(),
          ),
          { maxLength: 60 },
        ),
        async (subpartitions, buffers, plan) => {
          const required = Math.min(buffers, subpartitions);
          const h = setUp({
            subpartitions,
            segmentSize: 256,
            segments: 16,
            required,
            max: required,
          });
          const sinks = h.views.map(() => new Sink());
          const expected: Uint8Array[][] = sinks.map(() => []);
          for (const [[kind, size, pick], i] of plan.map((step, i) => [step, i] as const)) {
            const bytes = record(size, i);
            if (kind === "flush") {
              h.partition.flushAll();
            } else if (kind === "broadcast") {
              h.partition.broadcastRecord(frameRecord(bytes));
              for (const list of expected) list.push(bytes);
            } else {
              const target = pick % subpartitions;
              h.partition.emitRecord(frameRecord(bytes), target);
              (expected[target] as Uint8Array[]).push(bytes);
            }
            await drainUntilAvailable(h, sinks);
          }
          finishAndDrain(h, sinks);
          sinks.forEach((sink, s) => {
            expectRecords(sink.records(), expected[s] as Uint8Array[]);
            expect(sink.events).toBe(1); // EndOfPartition
          });
          expectAllSegmentsBack(h.global);
        },
      ),
      { numRuns: 80 },
    );
  });

  it("gives back the segment it writes when the partition is released", () => {
    const h = setUp({ subpartitions: 16, segmentSize: 256, segments: 4, required: 4, max: 4 });
    h.partition.emitRecord(frameRecord(record(10, 1)), 2);
    h.partition.release();
    h.partition.close();
    for (const view of h.views) view.releaseAllResources();
    expectAllSegmentsBack(h.global);
  });
});

describe("ResultPartition all records processed (FLIP-147's handshake)", () => {
  it("testWaitForAllRecordProcessed: resolves once the consumer of every subpartition acknowledged the EndOfData it read", async () => {
    const { partition, views } = setUp({ subpartitions: 2 });
    partition.broadcastEvent(new EndOfData(StopMode.DRAIN));
    let processed = false;
    void partition.getAllDataProcessedFuture().then(() => {
      processed = true;
    });
    for (const view of views) {
      const next = view.getNextBuffer();
      expect(next?.buffer.isBuffer()).toBe(false);
      expect(
        EventSerializer.fromBuffer(next?.buffer as NonNullable<typeof next>["buffer"]),
      ).toEqual(new EndOfData(StopMode.DRAIN));
      next?.buffer.recycleBuffer();
    }
    for (let i = 0; i < views.length; i++) {
      (views[i] as ResultSubpartitionView).acknowledgeAllDataProcessed();
      // A repeated acknowledgement counts once.
      (views[0] as ResultSubpartitionView).acknowledgeAllDataProcessed();
      await Promise.resolve();
      expect(processed, `after ${i + 1} of ${views.length} acknowledgements`).toBe(
        i === views.length - 1,
      );
    }
    partition.release();
  });

  it("rejects with a CancelledError naming the consumers still missing when the partition is released first", async () => {
    const { partition, views } = setUp({ subpartitions: 3 });
    (views[1] as ResultSubpartitionView).acknowledgeAllDataProcessed();
    partition.release();
    await expect(partition.getAllDataProcessedFuture()).rejects.toMatchObject({
      code: ErrorCodes.CANCELLED,
      message: expect.stringContaining("before 2 of its 3 consumers processed all its records"),
    });
  });
});
