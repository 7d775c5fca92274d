import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ErrorCodes, IllegalStateError } from "../errors.js";
import { expectError, must } from "../testing/index.js";
import { BufferBuilder } from "./buffer-builder.js";
import { BufferConsumer } from "./buffer-consumer.js";
import { DataType } from "./data-type.js";
import type { LocalBufferPool } from "./local-buffer-pool.js";
import { MemorySegment } from "./memory-segment.js";
import { NetworkBuffer } from "./network-buffer.js";
import { NetworkBufferPool } from "./network-buffer-pool.js";

const SEGMENT_SIZE = 64;

function bytes(...values: number[]): Uint8Array {
  return Uint8Array.from(values);
}

/** Builds the consumer's pending bytes, returns them and recycles the slice. */
function drain(consumer: BufferConsumer): number[] {
  const buffer = consumer.build();
  const result = [...buffer.view()];
  buffer.recycleBuffer();
  return result;
}

function expectIllegalState(fn: () => unknown): void {
  expectError(fn, IllegalStateError, ErrorCodes.ILLEGAL_STATE);
}

let global: NetworkBufferPool;
let pool: LocalBufferPool;

beforeEach(() => {
  global = new NetworkBufferPool(4, SEGMENT_SIZE);
  pool = global.createBufferPool(1, 4);
});

afterEach(() => {
  pool.destroy();
  expect(global).toHaveAllSegmentsAvailable();
  global.destroy();
});

describe("BufferBuilder and BufferConsumer", () => {
  it("keeps appended bytes invisible to the consumer until commit", () => {
    const builder = must(pool.requestBufferBuilder());
    const consumer = builder.createBufferConsumer();
    expect(builder.append(bytes(1, 2, 3))).toBe(3);
    expect(consumer.isDataAvailable()).toBe(false);
    expect(consumer.getWrittenBytes()).toBe(0);
    expect(drain(consumer)).toEqual([]);
    builder.commit();
    expect(consumer.isDataAvailable()).toBe(true);
    expect(consumer.getUnreadBytes()).toBe(3);
    expect(builder.getCommittedBytes()).toBe(3);
    expect(drain(consumer)).toEqual([1, 2, 3]);
    builder.close();
    consumer.close();
  });

  it("returns from build() only the bytes committed since the previous build()", () => {
    const builder = must(pool.requestBufferBuilder());
    const consumer = builder.createBufferConsumer();
    builder.appendAndCommit(bytes(1, 2));
    expect(drain(consumer)).toEqual([1, 2]);
    expect(drain(consumer)).toEqual([]);
    builder.appendAndCommit(bytes(3, 4, 5));
    builder.append(bytes(6));
    expect(drain(consumer)).toEqual([3, 4, 5]);
    builder.finish();
    expect(drain(consumer)).toEqual([6]);
    builder.close();
    consumer.close();
  });

  it("hands out build() slices that are read-only, typed and outlive the consumer", () => {
    const builder = must(pool.requestBufferBuilder());
    const consumer = builder.createBufferConsumer();
    builder.appendAndCommit(bytes(7, 8, 9));
    const slice = consumer.build();
    expect(slice.isReadOnly()).toBe(true);
    expect(slice.isBuffer()).toBe(true);
    expect(slice.getDataType()).toBe(DataType.DATA_BUFFER);
    builder.close();
    consumer.close();
    expect(global.getNumberOfAvailableMemorySegments()).toBe(3);
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(0);
    expect([...slice.view()]).toEqual([7, 8, 9]);
    slice.recycleBuffer();
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
  });

  it("reports the consumer finished only after finish() and once every byte was read", () => {
    const builder = must(pool.requestBufferBuilder());
    const consumer = builder.createBufferConsumer();
    builder.appendAndCommit(bytes(1, 2));
    drain(consumer);
    expect(consumer.isFinished()).toBe(false);
    builder.appendAndCommit(bytes(3));
    expect(builder.finish()).toBe(3);
    expect(builder.isFinished()).toBe(true);
    expect(consumer.isBuilderFinished()).toBe(true);
    expect(consumer.isFinished()).toBe(false);
    expect(drain(consumer)).toEqual([3]);
    expect(consumer.isFinished()).toBe(true);
    expect(builder.finish()).toBe(3);
    builder.close();
    consumer.close();
  });

  it("rejects appends after finish or close", () => {
    const builder = must(pool.requestBufferBuilder());
    const consumer = builder.createBufferConsumer();
    builder.finish();
    expectIllegalState(() => builder.append(bytes(1)));
    expectIllegalState(() => builder.appendFullyAndCommit(bytes(1)));
    builder.close();
    builder.close(); // idempotent: must not recycle twice
    expectIllegalState(() => builder.append(bytes(1)));
    expectIllegalState(() => builder.appendFullyAndCommit(bytes(1)));
    consumer.close();
    // Closed without being finished: its per-record path refuses too.
    const unfinished = must(pool.requestBufferBuilder());
    unfinished.close();
    expectIllegalState(() => unfinished.appendFullyAndCommit(bytes(1)));
  });

  it("copies only what fits when appending more than the capacity", () => {
    const builder = must(pool.requestBufferBuilder());
    const consumer = builder.createBufferConsumer();
    const source = Uint8Array.from({ length: SEGMENT_SIZE + 10 }, (_, i) => i);
    expect(builder.appendAndCommit(source, 0, 20)).toBe(20);
    expect(builder.getWritableBytes()).toBe(SEGMENT_SIZE - 20);
    expect(builder.appendAndCommit(source, 20)).toBe(SEGMENT_SIZE - 20);
    expect(builder.isFull()).toBe(true);
    expect(builder.appendAndCommit(source, 0, 5)).toBe(0);
    expect(drain(consumer)).toEqual([...source.subarray(0, SEGMENT_SIZE)]);
    builder.close();
    consumer.close();
  });

  it("caps the writable bytes when trimmed, never below what is written", () => {
    const builder = must(pool.requestBufferBuilder());
    const consumer = builder.createBufferConsumer();
    builder.trim(10);
    expect(builder.getMaxCapacity()).toBe(10);
    expect(builder.appendAndCommit(new Uint8Array(16))).toBe(10);
    expect(builder.isFull()).toBe(true);
    builder.trim(4);
    expect(builder.getMaxCapacity()).toBe(10);
    builder.trim(SEGMENT_SIZE * 2);
    expect(builder.getMaxCapacity()).toBe(SEGMENT_SIZE);
    expect(builder.appendAndCommit(new Uint8Array(2))).toBe(2);
    expect(consumer.getUnreadBytes()).toBe(12);
    builder.close();
    consumer.close();
  });

  it("creates one consumer per builder, reading from the write position or from the start", () => {
    const builder = must(pool.requestBufferBuilder());
    builder.appendAndCommit(bytes(1, 2));
    const consumer = builder.createBufferConsumer();
    expectIllegalState(() => builder.createBufferConsumer());
    expectIllegalState(() => builder.createBufferConsumerFromBeginning());
    builder.appendAndCommit(bytes(3));
    expect(drain(consumer)).toEqual([3]);
    builder.close();
    consumer.close();

    const second = must(pool.requestBufferBuilder());
    second.appendAndCommit(bytes(4, 5));
    const fromStart = second.createBufferConsumerFromBeginning();
    expect(drain(fromStart)).toEqual([4, 5]);
    second.close();
    fromStart.close();
  });

  it("shares the segment with copies and returns it only after the builder and every consumer closed", () => {
    const builder = must(pool.requestBufferBuilder());
    const consumer = builder.createBufferConsumer();
    builder.appendAndCommit(bytes(1, 2));
    drain(consumer);
    const copy = consumer.copy();
    const copyOfCopy = copy.copy();
    builder.appendAndCommit(bytes(3, 4));
    builder.finish();
    // Each reader sees the bytes after the position it was copied at, from the same memory.
    const fromOriginal = consumer.build();
    const fromCopy = copy.build();
    expect([...fromOriginal.view()]).toEqual([3, 4]);
    expect([...fromCopy.view()]).toEqual([3, 4]);
    expect(fromCopy.getMemorySegment()).toBe(fromOriginal.getMemorySegment());
    expect(global.getNumberOfUsedMemorySegments()).toBe(1);
    fromOriginal.recycleBuffer();
    fromCopy.recycleBuffer();
    expect(drain(copyOfCopy)).toEqual([3, 4]);
    expect(copy.isFinished()).toBe(true);

    const freeBefore = pool.getNumberOfAvailableMemorySegments();
    builder.close();
    consumer.close();
    copy.close();
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(freeBefore);
    copyOfCopy.close();
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(freeBefore + 1);
    expectIllegalState(() => copy.build());
    expectIllegalState(() => copy.copy());
    expect(copy.isRecycled()).toBe(true);
  });

  it("carries the partial record length over to copies", () => {
    const builder = must(pool.requestBufferBuilder());
    const consumer = builder.createBufferConsumer();
    expect(consumer.partialRecordLength).toBe(0);
    consumer.partialRecordLength = 5;
    const copy = consumer.copy();
    expect(copy.partialRecordLength).toBe(5);
    builder.close();
    consumer.close();
    copy.close();
  });

  it("keeps the builder's data type on consumers and built slices", () => {
    const segment = must(pool.requestMemorySegment());
    const builder = new BufferBuilder(segment, pool, DataType.EVENT_BUFFER);
    const consumer = builder.createBufferConsumer();
    builder.appendAndCommit(bytes(1));
    expect(builder.getDataType()).toBe(DataType.EVENT_BUFFER);
    expect(consumer.isBuffer()).toBe(false);
    expect(consumer.getDataType()).toBe(DataType.EVENT_BUFFER);
    const slice = consumer.build();
    expect(slice.getDataType()).toBe(DataType.EVENT_BUFFER);
    slice.recycleBuffer();
    builder.close();
    consumer.close();
  });

  it("wraps a finished buffer in a finished consumer that takes over its reference", () => {
    const buffer = must(pool.requestBuffer());
    buffer.writableView().set([5, 6, 7]);
    buffer.setSize(3);
    const consumer = BufferConsumer.fromFinishedBuffer(buffer);
    expect(consumer.isBuilderFinished()).toBe(true);
    expect(consumer.isFinished()).toBe(false);
    expect(consumer.getWrittenBytes()).toBe(3);
    const copy = consumer.copy();
    expect(drain(consumer)).toEqual([5, 6, 7]);
    expect(consumer.isFinished()).toBe(true);
    expect(copy.isFinished()).toBe(false);
    consumer.close();
    expect(buffer.isRecycled()).toBe(false);
    expect(drain(copy)).toEqual([5, 6, 7]);
    copy.close();
    expect(buffer.isRecycled()).toBe(true);
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
  });

  it("works on unpooled event segments too", () => {
    const event = new NetworkBuffer(
      MemorySegment.allocateUnpooled(4),
      { recycle: () => {} },
      DataType.END_OF_PARTITION,
      4,
    );
    const consumer = BufferConsumer.fromFinishedBuffer(event);
    expect(consumer.isBuffer()).toBe(false);
    expect(drain(consumer)).toHaveLength(4);
    consumer.close();
    expect(event.isRecycled()).toBe(true);
  });
});

describe("BufferBuilder copy paths", () => {
  it("copies whole sources, short runs and long partial runs exactly", () => {
    const segment = MemorySegment.allocateUnpooled(SEGMENT_SIZE);
    const builder = new BufferBuilder(segment, { recycle: () => {} });
    const consumer = builder.createBufferConsumer();
    const source = Uint8Array.from({ length: 40 }, (_, i) => i + 1);
    expect(builder.append(source.subarray(0, 5))).toBe(5); // whole source
    expect(builder.append(source, 5, 7)).toBe(7); // short partial run (loop)
    expect(builder.append(source, 12, 28)).toBe(28); // long partial run (subarray)
    expect(builder.getWritableBytes()).toBe(SEGMENT_SIZE - 40);
    builder.commit();
    const built = consumer.build();
    expect(Array.from(built.view())).toEqual(Array.from(source));
    built.recycleBuffer();
    consumer.close();
    builder.close();
  });

  it("appends and commits all of the bytes, or nothing when they do not fit", () => {
    const size = 1024;
    const builder = new BufferBuilder(MemorySegment.allocateUnpooled(size), { recycle: () => {} });
    const consumer = builder.createBufferConsumer();
    const record = Uint8Array.from({ length: 0x0103 }, (_, i) => i & 0xff); // copied with set()
    const short = Uint8Array.of(9, 8, 7); // copied byte by byte
    expect(builder.appendFullyAndCommit(record)).toBe(true);
    expect(builder.appendFullyAndCommit(short)).toBe(true);
    expect(builder.getCommittedBytes()).toBe(record.length + short.length);
    const built = consumer.build();
    expect(Array.from(built.view())).toEqual([...Array.from(record), 9, 8, 7]);
    built.recycleBuffer();
    // Room for all but one byte of the record: nothing is written.
    builder.append(new Uint8Array(builder.getWritableBytes() - (record.length - 1)));
    builder.commit();
    const committed = builder.getCommittedBytes();
    expect(builder.appendFullyAndCommit(record)).toBe(false);
    expect(builder.getCommittedBytes()).toBe(committed);
    expect(builder.getWritableBytes()).toBe(record.length - 1);
    consumer.close();
    builder.close();
    expectError(
      () => builder.appendFullyAndCommit(record),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
  });
});
