import { describe, expect, it } from "vitest";
import { ErrorCodes, IllegalArgumentError } from "../errors.js";
import { expectError } from "../testing/index.js";
import { MemorySegment } from "./memory-segment.js";
import { NetworkBufferPool } from "./network-buffer-pool.js";

describe("MemorySegment", () => {
  it("wraps existing memory without copying it", () => {
    const memory = Buffer.alloc(16);
    const owner = {};
    const segment = MemorySegment.wrap(memory, owner);
    segment.put(3, 0xab);
    expect(memory[3]).toBe(0xab);
    memory[4] = 7;
    expect(segment.get(4)).toBe(7);
    expect(segment.size).toBe(16);
    expect(segment.owner).toBe(owner);
  });

  it("allocates zero-filled unpooled segments of the exact size", () => {
    const segment = MemorySegment.allocateUnpooled(33);
    expect(segment.size).toBe(33);
    expect([...segment.memory].every((b) => b === 0)).toBe(true);
    expect(segment.owner).toBeNull();
    expect(MemorySegment.allocateUnpooled(0).size).toBe(0);
  });

  it("rejects a negative or fractional unpooled size with IllegalArgumentError", () => {
    for (const size of [-1, 1.5, Number.NaN]) {
      expectError(
        () => MemorySegment.allocateUnpooled(size),
        IllegalArgumentError,
        ErrorCodes.INVALID_ARGUMENT,
      );
    }
  });

  it("throws RangeError for single-byte access outside the segment", () => {
    const segment = MemorySegment.allocateUnpooled(4);
    expect(() => segment.get(4)).toThrow(RangeError);
    expect(() => segment.get(-1)).toThrow(RangeError);
    expect(() => segment.put(4, 1)).toThrow(RangeError);
    expect(() => segment.put(-1, 1)).toThrow(RangeError);
    segment.put(3, 9);
    expect(segment.get(3)).toBe(9);
  });

  it("reads and writes ints and longs big-endian", () => {
    const segment = MemorySegment.allocateUnpooled(12);
    segment.putInt(0, 0x01020304);
    expect([...segment.memory.subarray(0, 4)]).toEqual([1, 2, 3, 4]);
    expect(segment.getInt(0)).toBe(0x01020304);
    segment.putInt(0, -2);
    expect(segment.getInt(0)).toBe(-2);
    segment.putLong(4, 0x0102030405060708n);
    expect([...segment.memory.subarray(4, 12)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(segment.getLong(4)).toBe(0x0102030405060708n);
    expect(() => segment.getInt(9)).toThrow(RangeError);
    expect(() => segment.putLong(5, 1n)).toThrow(RangeError);
  });

  it("copies byte ranges in and out and between segments, bounds-checked", () => {
    const a = MemorySegment.allocateUnpooled(8);
    const b = MemorySegment.allocateUnpooled(8);
    a.putBytes(2, Uint8Array.of(9, 1, 2, 3, 9), 1, 3);
    expect([...a.memory]).toEqual([0, 0, 1, 2, 3, 0, 0, 0]);
    const target = new Uint8Array(5);
    a.getBytes(2, target, 1, 3);
    expect([...target]).toEqual([0, 1, 2, 3, 0]);
    a.copyTo(2, b, 5, 3);
    expect([...b.memory]).toEqual([0, 0, 0, 0, 0, 1, 2, 3]);
    expect(() => a.putBytes(6, Uint8Array.of(1, 2, 3), 0, 3)).toThrow(RangeError);
    expect(() => a.getBytes(-1, target, 0, 1)).toThrow(RangeError);
    expect(() => a.copyTo(0, b, 6, 3)).toThrow(RangeError);
    expect(() => a.copyTo(7, b, 0, 2)).toThrow(RangeError);
  });

  it("gives views that share the segment's memory", () => {
    const segment = MemorySegment.allocateUnpooled(8);
    const view = segment.wrapView(2, 3);
    expect(view.length).toBe(3);
    view[0] = 42;
    expect(segment.get(2)).toBe(42);
    expect(() => segment.wrapView(6, 3)).toThrow(RangeError);
  });

  it("carves a NetworkBufferPool's memory into disjoint segments it owns", () => {
    const pool = new NetworkBufferPool(4, 64);
    const segments = [
      ...pool.requestUnpooledMemorySegments(2),
      ...pool.requestUnpooledMemorySegments(2),
    ];
    expect(new Set(segments).size).toBe(4);
    for (const [i, segment] of segments.entries()) {
      expect(segment.size).toBe(64);
      expect(segment.owner).toBe(pool);
      segment.memory.fill(i);
    }
    for (const [i, segment] of segments.entries()) {
      expect([...segment.memory].every((b) => b === i)).toBe(true);
    }
    pool.recycleUnpooledMemorySegments(segments);
    expect(pool).toHaveAllSegmentsAvailable();
  });
});
