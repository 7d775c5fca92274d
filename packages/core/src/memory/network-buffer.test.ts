import { afterEach, describe, expect, it } from "vitest";
import {
  BufferPoolDestroyedError,
  BufferRecycledError,
  ErrorCodes,
  IllegalArgumentError,
  IllegalStateError,
  isSluiceError,
  SluiceError,
} from "../errors.js";
import { expectError, must } from "../testing/index.js";
import type { BufferRecycler } from "./buffer-recycler.js";
import { FreeingBufferRecycler } from "./buffer-recycler.js";
import { DataType } from "./data-type.js";
import type { LocalBufferPool } from "./local-buffer-pool.js";
import { MemorySegment } from "./memory-segment.js";
import { NetworkBuffer } from "./network-buffer.js";
import { NetworkBufferPool } from "./network-buffer-pool.js";

/** A recycler that records every segment it gets back. */
function recordingRecycler(): BufferRecycler & { recycled: MemorySegment[] } {
  const recycled: MemorySegment[] = [];
  return {
    recycled,
    recycle(segment: MemorySegment): void {
      recycled.push(segment);
    },
  };
}

let global: NetworkBufferPool | undefined;
let pool: LocalBufferPool;

function setUpPool(): void {
  global = new NetworkBufferPool(4, 64);
  pool = global.createBufferPool(1, 4);
}

afterEach(() => {
  const networkPool = global;
  global = undefined;
  if (networkPool === undefined) return;
  pool.destroy();
  expect(networkPool).toHaveAllSegmentsAvailable();
  networkPool.destroy();
});

describe("NetworkBuffer", () => {
  it("returns the segment to its recycler exactly once when the last reference is dropped", () => {
    const recycler = recordingRecycler();
    const segment = MemorySegment.allocateUnpooled(32);
    const buffer = new NetworkBuffer(segment, recycler);
    expect(buffer.refCnt()).toBe(1);
    buffer.retainBuffer();
    expect(buffer.refCnt()).toBe(2);
    buffer.recycleBuffer();
    expect(recycler.recycled).toEqual([]);
    expect(buffer.isRecycled()).toBe(false);
    buffer.recycleBuffer();
    expect(recycler.recycled).toEqual([segment]);
    expect(buffer.isRecycled()).toBe(true);
  });

  it("throws BufferRecycledError on a double recycle and keeps the global available count right", () => {
    setUpPool();
    const networkPool = must(global);
    const buffer = must(pool.requestBuffer());
    expect(networkPool.getNumberOfAvailableMemorySegments()).toBe(3);
    pool.destroy(); // recycled segments now go straight back to the global pool
    buffer.recycleBuffer();
    expect(networkPool.getNumberOfAvailableMemorySegments()).toBe(4);
    const error = expectError(
      () => buffer.recycleBuffer(),
      BufferRecycledError,
      ErrorCodes.BUFFER_RECYCLED,
    );
    expect(error.message).toContain("recycled more often than retained");
    expect(networkPool.getNumberOfAvailableMemorySegments()).toBe(4);
  });

  it("does not put a double-recycled segment on the local free list twice", () => {
    setUpPool();
    const buffer = must(pool.requestBuffer());
    buffer.recycleBuffer();
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
    expect(() => buffer.recycleBuffer()).toThrow(BufferRecycledError);
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(1);
    const a = must(pool.requestBuffer());
    const b = must(pool.requestBuffer());
    expect(a.getMemorySegment()).not.toBe(b.getMemorySegment());
    a.recycleBuffer();
    b.recycleBuffer();
  });

  it("keeps its size, reader index and type, bounded by the capacity", () => {
    const buffer = new NetworkBuffer(
      MemorySegment.allocateUnpooled(16),
      FreeingBufferRecycler,
      DataType.EVENT_BUFFER,
      5,
    );
    expect(buffer.getSize()).toBe(5);
    expect(buffer.getMaxCapacity()).toBe(16);
    expect(buffer.isBuffer()).toBe(false);
    expect(buffer.getDataType()).toBe(DataType.EVENT_BUFFER);
    buffer.setDataType(DataType.DATA_BUFFER);
    expect(buffer.isBuffer()).toBe(true);
    buffer.setReaderIndex(2);
    expect(buffer.readableBytes()).toBe(3);
    expectError(() => buffer.setSize(1), IllegalArgumentError, ErrorCodes.INVALID_ARGUMENT);
    expectError(() => buffer.setSize(17), IllegalArgumentError, ErrorCodes.INVALID_ARGUMENT);
    expectError(() => buffer.setReaderIndex(6), IllegalArgumentError, ErrorCodes.INVALID_ARGUMENT);
    buffer.setSize(16);
    expect(buffer.writableView().length).toBe(0);
    expect(
      () => new NetworkBuffer(MemorySegment.allocateUnpooled(4), FreeingBufferRecycler, 1, 5),
    ).toThrow(IllegalArgumentError);
    buffer.recycleBuffer();
  });

  it("exposes written, readable and writable bytes as views on the segment", () => {
    const segment = MemorySegment.allocateUnpooled(8);
    const buffer = new NetworkBuffer(segment, FreeingBufferRecycler);
    buffer.writableView().set([1, 2, 3]);
    buffer.setSize(3);
    buffer.setReaderIndex(1);
    expect([...buffer.view()]).toEqual([1, 2, 3]);
    expect([...buffer.readableView()]).toEqual([2, 3]);
    expect(buffer.writableView().length).toBe(5);
    buffer.view()[0] = 9;
    expect(segment.get(0)).toBe(9);
    buffer.recycleBuffer();
    expectError(() => buffer.view(), IllegalStateError, ErrorCodes.ILLEGAL_STATE);
    expectError(() => buffer.retainBuffer(), IllegalStateError, ErrorCodes.ILLEGAL_STATE);
  });

  it("shares the reference count between a buffer and its read-only slices", () => {
    const recycler = recordingRecycler();
    const buffer = new NetworkBuffer(MemorySegment.allocateUnpooled(16), recycler);
    buffer.setSize(10);
    const slice = buffer.readOnlySlice(2, 5).retainBuffer();
    expect(buffer.refCnt()).toBe(2);
    expect(slice.refCnt()).toBe(2);
    buffer.recycleBuffer();
    expect(recycler.recycled).toHaveLength(0);
    expect(slice.isRecycled()).toBe(false);
    slice.recycleBuffer();
    expect(recycler.recycled).toHaveLength(1);
    expect(buffer.isRecycled()).toBe(true);
    expect(() => slice.recycleBuffer()).toThrow(BufferRecycledError);
    expect(recycler.recycled).toHaveLength(1);
  });

  it("gives slices their own indices over the parent's bytes, nested slices included", () => {
    const buffer = new NetworkBuffer(MemorySegment.allocateUnpooled(16), FreeingBufferRecycler);
    buffer.writableView().set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    buffer.setSize(10);
    buffer.setReaderIndex(4);
    const slice = buffer.readOnlySlice(2, 6);
    expect(slice.isReadOnly()).toBe(true);
    expect(slice.getSize()).toBe(6);
    expect(slice.getReaderIndex()).toBe(0);
    expect(slice.getMemorySegmentOffset()).toBe(2);
    expect([...slice.view()]).toEqual([2, 3, 4, 5, 6, 7]);
    slice.setReaderIndex(1);
    expect([...slice.readableView()]).toEqual([3, 4, 5, 6, 7]);
    expect(buffer.getReaderIndex()).toBe(4);
    const nested = slice.readOnlySlice(1, 2);
    expect([...nested.view()]).toEqual([3, 4]);
    expect(nested.getMemorySegmentOffset()).toBe(3);
    // the default slice covers the readable bytes
    expect([...buffer.readOnlySlice().view()]).toEqual([4, 5, 6, 7, 8, 9]);
    expectError(
      () => buffer.readOnlySlice(8, 3),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
    );
    buffer.recycleBuffer();
    expectError(() => buffer.readOnlySlice(0, 1), IllegalStateError, ErrorCodes.ILLEGAL_STATE);
  });

  it("does not let a read-only slice change its size, type or bytes", () => {
    const buffer = new NetworkBuffer(MemorySegment.allocateUnpooled(16), FreeingBufferRecycler);
    buffer.setSize(8);
    const slice = buffer.readOnlySlice(0, 4);
    expectError(() => slice.setSize(2), IllegalStateError, ErrorCodes.ILLEGAL_STATE);
    expectError(
      () => slice.setDataType(DataType.EVENT_BUFFER),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
    expectError(() => slice.writableView(), IllegalStateError, ErrorCodes.ILLEGAL_STATE);
    expect(slice.getSize()).toBe(4);
    expect(slice.getDataType()).toBe(DataType.DATA_BUFFER);
    buffer.recycleBuffer();
  });

  it("keeps a recycled-then-requested segment independent of the stale buffer", () => {
    setUpPool();
    const first = must(pool.requestBuffer());
    const segment = first.getMemorySegment();
    first.recycleBuffer();
    const second = must(pool.requestBuffer());
    expect(second.getMemorySegment()).toBe(segment);
    expect(() => first.recycleBuffer()).toThrow(BufferRecycledError);
    // The stale double recycle must not have freed the segment under the new owner.
    expect(second.isRecycled()).toBe(false);
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(0);
    second.recycleBuffer();
  });
});

describe("SluiceError branding", () => {
  it("recognises an error from a second copy of the package by its Symbol.for brand", () => {
    // What a duplicate install would produce: a different class, the same global brand.
    class ForeignBufferRecycledError extends Error {
      readonly code = ErrorCodes.BUFFER_RECYCLED;
      override name = "BufferRecycledError";
      get [Symbol.for("@sluice/error")](): string {
        return this.name;
      }
    }
    const foreign = new ForeignBufferRecycledError("double recycle");
    expect(foreign instanceof BufferRecycledError).toBe(true);
    expect(foreign instanceof SluiceError).toBe(true);
    expect(foreign instanceof BufferPoolDestroyedError).toBe(false);
    expect(isSluiceError(foreign, ErrorCodes.BUFFER_RECYCLED)).toBe(true);
    expect(isSluiceError(foreign, ErrorCodes.BUFFER_POOL_DESTROYED)).toBe(false);
    expect(new Error("plain") instanceof SluiceError).toBe(false);
    expect({ code: ErrorCodes.BUFFER_RECYCLED } instanceof BufferRecycledError).toBe(false);
  });

  it("keeps local errors instances of their class, SluiceError and Error with a cause", () => {
    const cause = new Error("root");
    const error = new BufferRecycledError("x", { cause });
    expect(error).toBeInstanceOf(BufferRecycledError);
    expect(error).toBeInstanceOf(SluiceError);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(BufferPoolDestroyedError);
    expect(error.cause).toBe(cause);
    expect(error.code).toBe(ErrorCodes.BUFFER_RECYCLED);
    expect(error.name).toBe("BufferRecycledError");
  });
});
