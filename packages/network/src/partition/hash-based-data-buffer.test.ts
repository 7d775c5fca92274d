import { frameRecord, type MemorySegment } from "@sluice/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { splitFramedRecords, unpooledSegments } from "../test-support/framed-records.js";
import { HashBasedDataBuffer } from "./hash-based-data-buffer.js";

/** Reads every run out and returns the run order, each run's buffers and their segments. */
function drain(buffer: HashBasedDataBuffer): {
  order: number[];
  bytes: Map<number, Buffer[]>;
  handedOut: MemorySegment[];
} {
  buffer.finish();
  const order: number[] = [];
  const bytes = new Map<number, Buffer[]>();
  const handedOut: MemorySegment[] = [];
  for (let s = buffer.currentSubpartition(); s !== -1; s = buffer.currentSubpartition()) {
    order.push(s);
    for (let next = buffer.nextBuffer(undefined); next !== undefined; ) {
      handedOut.push(next.segment);
      bytes.set(s, [
        ...(bytes.get(s) ?? []),
        Buffer.from(next.segment.memory.subarray(0, next.size)),
      ]);
      next = buffer.nextBuffer(undefined);
    }
  }
  return { order, bytes, handedOut };
}

describe("HashBasedDataBuffer", () => {
  it("hands out its own segments, one run per subpartition in the given order, each in arrival order", () => {
    const memory = unpooledSegments(8, 64);
    const buffer = new HashBasedDataBuffer(memory, 3, [2, 0, 1]);
    expect(buffer.copiesIntoWriteBuffers).toBe(false);
    const written = new Map<number, Buffer[]>();
    for (let i = 0; i < 20; i++) {
      const target = (i * 7) % 3;
      const record = Buffer.from(`record ${i} for ${target}`);
      expect(buffer.append(frameRecord(record), target)).toBe(true);
      written.set(target, [...(written.get(target) ?? []), record]);
    }
    expect(buffer.getNumberOfRecords()).toBe(20);
    const { order, bytes, handedOut } = drain(buffer);
    expect(order).toEqual([2, 0, 1]);
    for (const segment of handedOut) expect(memory).toContain(segment);
    expect(new Set(handedOut).size).toBe(handedOut.length);
    for (const [target, expected] of written) {
      expect(splitFramedRecords(bytes.get(target) ?? [])).toEqual(expected);
      // Every buffer but the last of a run is full: records are packed across segments.
      for (const chunk of (bytes.get(target) ?? []).slice(0, -1)) expect(chunk.length).toBe(64);
    }
  });

  it("skips subpartitions without records", () => {
    const buffer = new HashBasedDataBuffer(unpooledSegments(4, 128), 4, [0, 1, 2, 3]);
    buffer.append(frameRecord(Buffer.from("only three")), 3);
    buffer.append(frameRecord(Buffer.from("and one")), 1);
    expect(drain(buffer).order).toEqual([1, 3]);
  });

  it("refuses a record that needs more segments than are free, writing nothing", () => {
    const buffer = new HashBasedDataBuffer(unpooledSegments(2, 64), 2, [0, 1]);
    const record = Buffer.alloc(40, 7);
    expect(buffer.append(frameRecord(record), 0)).toBe(true);
    expect(buffer.append(frameRecord(record), 1)).toBe(true);
    // Each subpartition holds one segment with 20 bytes left: the next record needs a third.
    expect(buffer.append(frameRecord(record), 0)).toBe(false);
    expect(buffer.append(frameRecord(Buffer.alloc(16, 1)), 0)).toBe(true);
    expect(buffer.getNumberOfRecords()).toBe(3);
    expect(buffer.canEverHold(128)).toBe(true);
    expect(buffer.canEverHold(128 + 1)).toBe(false);
    const { bytes } = drain(buffer);
    expect(splitFramedRecords(bytes.get(0) ?? [])).toEqual([record, Buffer.alloc(16, 1)]);
    expect(splitFramedRecords(bytes.get(1) ?? [])).toEqual([record]);
  });

  it("keeps records intact that span segments, length prefixes included, for any record and segment sizes", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(3), fc.uint8Array({ maxLength: 150 })), { maxLength: 60 }),
        fc.integer({ min: 5, max: 97 }),
        fc.integer({ min: 1, max: 200 }),
        (input, segmentSize, count) => {
          const buffer = new HashBasedDataBuffer(
            unpooledSegments(count, segmentSize),
            4,
            [3, 1, 0, 2],
          );
          const expected = new Map<number, Buffer[]>();
          let full = false;
          for (const [target, bytes] of input) {
            if (!buffer.append(frameRecord(bytes), target)) {
              full = true;
              continue; // a later, smaller record may still fit
            }
            expected.set(target, [...(expected.get(target) ?? []), Buffer.from(bytes)]);
          }
          const { bytes, handedOut } = drain(buffer);
          expect(handedOut.length).toBeLessThanOrEqual(count);
          if (!full) expect(buffer.isEmpty()).toBe(input.length === 0);
          for (let s = 0; s < 4; s++) {
            expect(splitFramedRecords(bytes.get(s) ?? [])).toEqual(expected.get(s) ?? []);
          }
        },
      ),
    );
  });
});
