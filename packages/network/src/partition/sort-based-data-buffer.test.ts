import { frameRecord, MemorySegment } from "@sluice/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { splitFramedRecords, unpooledSegments } from "../test-support/framed-records.js";
import { INDEX_ENTRY_BYTES, SortBasedDataBuffer } from "./sort-based-data-buffer.js";

/** Copies every run out into buffers of `bufferSize` and returns each subpartition's bytes. */
function drain(
  buffer: SortBasedDataBuffer,
  bufferSize: number,
): { order: number[]; bytes: Map<number, Buffer[]> } {
  buffer.finish();
  const order: number[] = [];
  const bytes = new Map<number, Buffer[]>();
  const target = MemorySegment.allocateUnpooled(bufferSize);
  for (let s = buffer.currentSubpartition(); s !== -1; s = buffer.currentSubpartition()) {
    order.push(s);
    for (;;) {
      const n = buffer.copyInto(target);
      if (n === 0) break;
      expect(n).toBeLessThanOrEqual(bufferSize);
      const list = bytes.get(s) ?? [];
      list.push(Buffer.from(target.memory.subarray(0, n)));
      bytes.set(s, list);
    }
  }
  return { order, bytes };
}

describe("SortBasedDataBuffer", () => {
  it("copies out one run per subpartition, in the given subpartition order, each in arrival order", () => {
    const buffer = new SortBasedDataBuffer(unpooledSegments(4, 256), 3, [2, 0, 1]);
    const written = new Map<number, Buffer[]>();
    for (let i = 0; i < 30; i++) {
      const target = (i * 7) % 3;
      const record = Buffer.from(`record ${i} for ${target}`);
      expect(buffer.append(frameRecord(record), target)).toBe(true);
      written.set(target, [...(written.get(target) ?? []), record]);
    }
    const { order, bytes } = drain(buffer, 64);
    expect(order).toEqual([2, 0, 1]);
    for (const [target, expected] of written) {
      expect(splitFramedRecords(bytes.get(target) ?? [])).toEqual(expected);
      // Every output buffer but the last of a run is full: records are packed across buffers.
      const chunks = bytes.get(target) ?? [];
      for (const chunk of chunks.slice(0, -1)) expect(chunk.length).toBe(64);
      expect(buffer.getBytes(target)).toBe(Buffer.concat(chunks).length);
    }
  });

  it("skips subpartitions without records", () => {
    const buffer = new SortBasedDataBuffer(unpooledSegments(1, 128), 4, [0, 1, 2, 3]);
    buffer.append(frameRecord(Buffer.from("only three")), 3);
    buffer.append(frameRecord(Buffer.from("and one")), 1);
    expect(drain(buffer, 128).order).toEqual([1, 3]);
  });

  it("refuses a record that does not fit what is left, and takes it again after reset", () => {
    const buffer = new SortBasedDataBuffer(unpooledSegments(2, 64), 1, [0]);
    const record = Buffer.alloc(40, 7);
    expect(buffer.append(frameRecord(record), 0)).toBe(true);
    expect(buffer.append(frameRecord(record), 0)).toBe(true);
    // 2 × (4 + 40 + index entry) = 104 of 128 bytes used: a third does not fit.
    expect(buffer.append(frameRecord(record), 0)).toBe(false);
    expect(buffer.getNumberOfRecords()).toBe(2);
    expect(buffer.canEverHold(128 - INDEX_ENTRY_BYTES)).toBe(true);
    expect(buffer.canEverHold(128 - INDEX_ENTRY_BYTES + 1)).toBe(false);
    expect(splitFramedRecords(drain(buffer, 64).bytes.get(0) ?? [])).toEqual([record, record]);
    buffer.reset();
    expect(buffer.isEmpty()).toBe(true);
    expect(buffer.append(frameRecord(record), 0)).toBe(true);
  });

  it("keeps records intact that span segments, length prefixes included, for any record sizes and buffer sizes", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(3), fc.uint8Array({ maxLength: 150 })), { maxLength: 60 }),
        fc.integer({ min: 5, max: 97 }),
        fc.integer({ min: 8, max: 200 }),
        (input, segmentSize, bufferSize) => {
          const buffer = new SortBasedDataBuffer(
            unpooledSegments(200, segmentSize),
            4,
            [3, 1, 0, 2],
          );
          const expected = new Map<number, Buffer[]>();
          for (const [target, bytes] of input) {
            if (!buffer.append(frameRecord(bytes), target)) return; // full: covered by the case above
            expected.set(target, [...(expected.get(target) ?? []), Buffer.from(bytes)]);
          }
          const { bytes } = drain(buffer, bufferSize);
          for (let s = 0; s < 4; s++) {
            expect(splitFramedRecords(bytes.get(s) ?? [])).toEqual(expected.get(s) ?? []);
          }
        },
      ),
    );
  });
});
