import {
  BytesSerializer,
  ErrorCodes,
  IllegalStateError,
  MIN_TAIL_BYTES,
  NetworkBufferPool,
  type RecordHolder,
  ResultPartitionID,
  SharedNetworkMemory,
  SpillingAdaptiveSpanningRecordDeserializer,
  StringSerializer,
} from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import { PipelinedResultPartition, ResultPartitionManager } from "@sluice/network/plugin";
import { ResultPartitionType, type ResultPartitionWriter } from "@sluice/runtime-api";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../clock/test-support/manual-clock.js";
import { TimerGauge } from "../metrics/timer-gauge.js";
import { BroadcastPartitioner } from "../partitioner/broadcast-partitioner.js";
import { ForwardPartitioner } from "../partitioner/forward-partitioner.js";
import { RebalancePartitioner } from "../partitioner/rebalance-partitioner.js";
import {
  BroadcastRecordWriter,
  type BufferTimeout,
  bufferTimeoutOf,
  ChannelSelectorRecordWriter,
  createRecordWriter,
} from "./record-writer.js";

function partition(
  pool: NetworkBufferPool,
  subpartitions = 1,
  maxBuffers = 16,
): PipelinedResultPartition {
  const result = new PipelinedResultPartition({
    owningTaskName: "test",
    partitionIndex: 0,
    partitionId: new ResultPartitionID(),
    partitionType: ResultPartitionType.PIPELINED_BOUNDED,
    numberOfSubpartitions: subpartitions,
    partitionManager: new ResultPartitionManager(),
    bufferPoolFactory: () =>
      pool.createBufferPool(subpartitions + 1, maxBuffers, {
        numberOfSubpartitions: subpartitions,
      }),
  });
  result.setup();
  return result;
}

/** A string writer sending everything to subpartition 0 of `target`. */
function forwardWriter(target: PipelinedResultPartition, bufferTimeout: BufferTimeout) {
  return createRecordWriter(target, new StringSerializer(), new ForwardPartitioner<string>(), {
    taskName: "t",
    bufferTimeout,
  });
}

describe("RecordWriter buffer timeout", () => {
  let pool: NetworkBufferPool;

  afterEach(() => {
    vi.useRealTimers();
    pool?.destroy();
  });

  it("flushes after every record when the interval is 0", () => {
    pool = new NetworkBufferPool(32, 4096);
    const target = partition(pool);
    const writer = forwardWriter(target, bufferTimeoutOf(true, 0));
    writer.emit("a");
    expect(target.getSubpartition(0).isDataAvailable()).toBe(true);
    writer.close();
    target.release();
  });

  it("makes a partly filled buffer available only when the OutputFlusher fires", () => {
    vi.useFakeTimers();
    pool = new NetworkBufferPool(32, 4096);
    const target = partition(pool);
    const writer = forwardWriter(target, bufferTimeoutOf(true, 100));
    writer.emit("a");
    expect(target.getSubpartition(0).isDataAvailable()).toBe(false);
    vi.advanceTimersByTime(99);
    expect(target.getSubpartition(0).isDataAvailable()).toBe(false);
    vi.advanceTimersByTime(1);
    expect(target.getSubpartition(0).isDataAvailable()).toBe(true);
    writer.close();
    target.release();
  });

  it("never flushes a partly filled buffer when the timeout is disabled, only full ones", () => {
    vi.useFakeTimers();
    pool = new NetworkBufferPool(32, 4096);
    const target = partition(pool);
    const writer = forwardWriter(target, bufferTimeoutOf(false, 100));
    writer.emit("a");
    vi.advanceTimersByTime(10_000);
    expect(target.getSubpartition(0).isDataAvailable()).toBe(false);
    // Fill past one 4 KiB buffer: the finished buffer becomes available without a flush.
    for (let i = 0; i < 100; i++) writer.emit("x".repeat(60));
    expect(target.getSubpartition(0).isDataAvailable()).toBe(true);
    writer.close();
    target.release();
  });

  it("hands the partition each record framed once: its 4-byte length, then the payload", () => {
    const seen: string[] = [];
    const recording = {
      numberOfSubpartitions: 2,
      emitRecord: (record: Uint8Array, target: number) =>
        seen.push(`${target}:${Buffer.from(record).toString("hex")}`),
      broadcastRecord: (record: Uint8Array) =>
        seen.push(`*:${Buffer.from(record).toString("hex")}`),
      flush: () => {},
      flushAll: () => {},
      isAvailable: () => true,
    } as unknown as ResultPartitionWriter;
    const options = { taskName: "t", bufferTimeout: bufferTimeoutOf(false, 0) };
    const writer = new ChannelSelectorRecordWriter(
      recording,
      new StringSerializer(),
      new ForwardPartitioner<string>(),
      options,
    );
    writer.emit("ab");
    writer.broadcastEmit("c");
    writer.close();
    // StringSerializer writes a 4-byte count, then the bytes: "ab" is a payload of 6 bytes.
    expect(seen).toEqual(["0:00000006" + "000000026162", "*:00000005" + "0000000163"]);
  });

  it("rethrows an OutputFlusher failure on the next emit", () => {
    vi.useFakeTimers();
    const failing: ResultPartitionWriter = {
      numberOfSubpartitions: 1,
      flushAll: () => {
        throw new Error("disk on fire");
      },
      emitRecord: () => {},
      flush: () => {},
      isAvailable: () => true,
    } as unknown as ResultPartitionWriter;
    const writer = new ChannelSelectorRecordWriter(
      failing,
      new StringSerializer(),
      new ForwardPartitioner<string>(),
      {
        taskName: "t",
        bufferTimeout: bufferTimeoutOf(true, 10),
      },
    );
    writer.emit("before");
    vi.advanceTimersByTime(10);
    expectError(
      () => writer.emit("after"),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
      "the OutputFlusher of t failed: disk on fire",
    );
    // The failure sticks: every later emit is refused too.
    expectError(
      () => writer.emit("again"),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
      "disk on fire",
    );
    writer.close();
  });

  it("uses one shared buffer for a broadcast selector (serialized and written once)", () => {
    pool = new NetworkBufferPool(32, 4096);
    const target = partition(pool, 4);
    const writer = createRecordWriter(
      target,
      new StringSerializer(),
      new BroadcastPartitioner<string>(),
      {
        taskName: "t",
        bufferTimeout: bufferTimeoutOf(true, 0),
      },
    );
    expect(writer).toBeInstanceOf(BroadcastRecordWriter);
    writer.emit("to everyone");
    // One segment serves all four subpartitions.
    expect(pool.getNumberOfUsedMemorySegments()).toBe(1);
    for (let i = 0; i < 4; i++) expect(target.getSubpartition(i).isDataAvailable()).toBe(true);
    writer.close();
    target.release();
    expect(pool).toHaveAllSegmentsAvailable();
  });
});

describe("RecordWriter back-pressure time", () => {
  let pool: NetworkBufferPool | undefined;

  afterEach(() => {
    pool?.destroy();
    pool = undefined;
  });

  it("counts the wait of a record still waiting for buffers as hard back-pressure, not soft", async () => {
    // At most four buffers of 64 bytes: a record of 1,000 bytes cannot be written completely.
    pool = new NetworkBufferPool(4, 64);
    const target = partition(pool);
    const clock = new ManualClock();
    const soft = new TimerGauge(clock);
    const hard = new TimerGauge(clock);
    const writer = createRecordWriter(
      target,
      new StringSerializer(),
      new ForwardPartitioner<string>(),
      {
        taskName: "t",
        bufferTimeout: bufferTimeoutOf(false, 0),
        backPressuredTime: soft,
        hardBackPressuredTime: hard,
      },
    );
    writer.emit("x".repeat(1_000));
    expect(target.hasPendingRecord()).toBe(true);
    const pending = writer.getAvailableFuture();
    expect(hard.isMeasuring()).toBe(true);
    expect(soft.isMeasuring()).toBe(false);
    clock.advanceMillis(300);
    // The consumer takes the full buffers: the pending bytes find room and the record completes.
    const view = target.createSubpartitionView(0, { notifyDataAvailable: () => {} });
    for (let turn = 0; turn < 1_000 && target.hasPendingRecord(); turn++) {
      for (let next = view.getNextBuffer(); next !== undefined; next = view.getNextBuffer()) {
        next.buffer.recycleBuffer();
      }
      // The partition resumes its pending record when the pool hands out a buffer again.
      await new Promise((resolve) => setImmediate(resolve));
    }
    await pending;
    expect(hard.isMeasuring()).toBe(false);
    expect(hard.getAccumulatedCount()).toBe(300);
    expect(soft.getAccumulatedCount()).toBe(0);
    view.releaseAllResources();
    writer.close();
    target.release();
  });
});

describe("RecordWriter records whose bytes already exist", () => {
  /** A partition that records what it is handed, with `emitRecordParts` or without it. */
  function recordingTarget(withParts: boolean) {
    const whole: Buffer[] = [];
    const parts: { head: Buffer; tail: Uint8Array }[] = [];
    const target = {
      numberOfSubpartitions: 1,
      emitRecord: (record: Uint8Array) => whole.push(Buffer.from(record)),
      ...(withParts
        ? {
            emitRecordParts: (head: Uint8Array, tail: Uint8Array) =>
              parts.push({ head: Buffer.from(head), tail }),
          }
        : {}),
      flush: () => {},
      flushAll: () => {},
      isAvailable: () => true,
    } as unknown as ResultPartitionWriter;
    return { target, whole, parts };
  }

  function bytesWriter(target: ResultPartitionWriter) {
    return new ChannelSelectorRecordWriter(
      target,
      BytesSerializer.INSTANCE,
      new ForwardPartitioner<Uint8Array>(),
      { taskName: "t", bufferTimeout: bufferTimeoutOf(false, 0) },
    );
  }

  it("hands a large byte array to the partition as the record's tail, straight from the caller's array", () => {
    const { target, whole, parts } = recordingTarget(true);
    const writer = bytesWriter(target);
    const value = new Uint8Array(MIN_TAIL_BYTES).fill(7);
    writer.emit(value);
    expect(whole).toEqual([]);
    expect(parts).toHaveLength(1);
    // The frame's length (the array's own 4-byte length plus its bytes), then that length.
    expect(parts[0]?.head.toString("hex")).toBe(
      (4 + MIN_TAIL_BYTES).toString(16).padStart(8, "0") +
        MIN_TAIL_BYTES.toString(16).padStart(8, "0"),
    );
    expect(parts[0]?.tail).toBe(value);
    expect(writer.numRecordsOut.getCount()).toBe(1);
    writer.close();
  });

  it("hands a small byte array to the partition whole", () => {
    const { target, whole, parts } = recordingTarget(true);
    const writer = bytesWriter(target);
    writer.emit(Uint8Array.of(1, 2));
    expect(parts).toEqual([]);
    expect(whole.map((record) => record.toString("hex"))).toEqual(["00000006" + "000000020102"]);
    writer.close();
  });

  it("hands every record whole to a partition without emitRecordParts", () => {
    const { target, whole } = recordingTarget(false);
    const writer = bytesWriter(target);
    const value = new Uint8Array(MIN_TAIL_BYTES + 1).fill(9);
    writer.emit(value);
    expect(whole).toHaveLength(1);
    expect(whole[0]?.readInt32BE(0)).toBe(4 + value.length);
    expect(whole[0]?.subarray(8)).toEqual(Buffer.from(value));
    writer.close();
  });

  it("delivers byte arrays of every size intact through a partition, however they span its buffers", async () => {
    const segment = 512;
    const pool = new NetworkBufferPool(8, segment);
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.integer({ min: 0, max: 4 * MIN_TAIL_BYTES }), {
            minLength: 1,
            maxLength: 12,
          }),
          async (sizes) => {
            const target = partition(pool, 1, 4);
            const view = target.createSubpartitionView(0, { notifyDataAvailable: () => {} });
            const writer = bytesWriter(target);
            const deserializer = new SpillingAdaptiveSpanningRecordDeserializer();
            const holder: RecordHolder<Uint8Array> = { value: undefined };
            const read: Buffer[] = [];
            const drain = () => {
              for (
                let next = view.getNextBuffer();
                next !== undefined;
                next = view.getNextBuffer()
              ) {
                if (!next.buffer.isBuffer()) {
                  next.buffer.recycleBuffer();
                  continue;
                }
                deserializer.setNextBuffer(next.buffer);
                for (;;) {
                  const result = deserializer.getNextRecord(BytesSerializer.INSTANCE, holder);
                  if (result.isFullRecord()) read.push(Buffer.from(holder.value as Uint8Array));
                  if (result.isBufferConsumed()) break;
                }
              }
            };
            const values = sizes.map((size, i) => {
              const value = new Uint8Array(size);
              for (let b = 0; b < size; b++) value[b] = (i * 131 + b * 7) & 0xff;
              return value;
            });
            for (const value of values) {
              // A pool of four 512-byte buffers: big arrays wait for buffers, drained at once.
              drain();
              expect(target.hasPendingRecord()).toBe(false);
              writer.emit(value);
              while (target.hasPendingRecord()) {
                drain();
                // The partition resumes the record when the pool hands out a buffer again.
                await new Promise((resolve) => setImmediate(resolve));
              }
            }
            target.finish();
            drain();
            writer.close();
            view.releaseAllResources();
            target.close();
            deserializer.clear();
            expect(read).toEqual(values.map((value) => Buffer.from(value)));
          },
        ),
      );
      expect(pool).toHaveAllSegmentsAvailable();
    } finally {
      pool.destroy();
    }
  });
});

describe("RecordWriter on shared network memory", () => {
  it("serializes each record at the alignment where the partition writes it, and the records arrive intact", () => {
    const memory = SharedNetworkMemory.create(16, 256, 1);
    const pool = new NetworkBufferPool(memory);
    const target = partition(pool, 3, 8);
    const alignment = target.getRecordAlignment();
    if (alignment === undefined) throw new Error("no record alignment on shared memory");
    const views = [0, 1, 2].map((i) =>
      target.createSubpartitionView(i, { notifyDataAvailable: () => {} }),
    );
    // Record by record: the alignment of the bytes handed over, and the partition's at that time.
    const handed: [number, number][] = [];
    const emitRecord = target.emitRecord.bind(target);
    target.emitRecord = (record, channel) => {
      handed.push([record.byteOffset & 7, alignment(channel)]);
      emitRecord(record, channel);
    };
    const writer = createRecordWriter(
      target,
      BytesSerializer.INSTANCE,
      new RebalancePartitioner<Uint8Array>(() => 0),
      { taskName: "t", bufferTimeout: bufferTimeoutOf(false, 0) },
    );
    const sent = Array.from({ length: 40 }, (_, i) => new Uint8Array(i % 11).fill(i));
    for (const value of sent) writer.emit(value);
    target.finish();
    writer.close();
    expect(new Set(handed.map(([, partitionAt]) => partitionAt)).size).toBeGreaterThan(3);
    expect(handed.filter(([at, partitionAt]) => at !== partitionAt)).toEqual([]);
    const received = views.map((view) => {
      const deserializer = new SpillingAdaptiveSpanningRecordDeserializer();
      const holder: RecordHolder<Uint8Array> = { value: undefined };
      const records: Uint8Array[] = [];
      for (let next = view.getNextBuffer(); next !== undefined; next = view.getNextBuffer()) {
        if (next.buffer.isBuffer()) {
          deserializer.setNextBuffer(next.buffer);
          for (;;) {
            const result = deserializer.getNextRecord(BytesSerializer.INSTANCE, holder);
            if (result.isFullRecord()) records.push(holder.value as Uint8Array);
            if (result.isBufferConsumed()) break;
          }
        } else {
          next.buffer.recycleBuffer();
        }
      }
      view.releaseAllResources();
      return records;
    });
    const hex = (records: Uint8Array[]) => records.map((r) => Buffer.from(r).toString("hex"));
    expect(received.map(hex)).toEqual(
      [0, 1, 2].map((i) => hex(sent.filter((_, n) => n % 3 === i))),
    );
    target.close();
    expect(pool).toHaveAllSegmentsAvailable();
    pool.destroy();
  });
});
