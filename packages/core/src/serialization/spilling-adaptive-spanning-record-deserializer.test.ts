import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ErrorCodes, RecordTooLargeError, SerializationError } from "../errors.js";
import { FreeingBufferRecycler } from "../memory/buffer-recycler.js";
import { MemorySegment } from "../memory/memory-segment.js";
import { NetworkBuffer } from "../memory/network-buffer.js";
import { NetworkBufferPool } from "../memory/network-buffer-pool.js";
import { expectError } from "../testing/index.js";
import { BytesSerializer } from "./bytes-serializer.js";
import type { DataInputDeserializer } from "./data-input-deserializer.js";
import { DataOutputSerializer } from "./data-output-serializer.js";
import { DeserializationResult } from "./deserialization-result.js";
import { Int32Serializer } from "./int32-serializer.js";
import { Int64Serializer } from "./int64-serializer.js";
import { ObjectSerializer } from "./object-serializer.js";
import { MAX_RECORD_SIZE_KEY, serializeRecord } from "./record-serializer.js";
import { SPILL_FILE_SUFFIX } from "./spill-file.js";
import {
  MIN_SPILLING_THRESHOLD,
  type RecordHolder,
  SpillingAdaptiveSpanningRecordDeserializer,
} from "./spilling-adaptive-spanning-record-deserializer.js";
import { StringSerializer } from "./string-serializer.js";
import { BufferBuilderWriter } from "./test-support/buffer-builder-writer.js";
import {
  feedAndCollect,
  feedAndCollectBytes,
  frameAll,
  patternBytes,
  pooledBufferOf,
  splitBuffer,
} from "./test-support/record-test-utils.js";
import type { TypeSerializer } from "./type-serializer.js";

const KiB = 1024;
/** BytesSerializer returns Buffers; compare contents as plain Uint8Arrays. */
const plain = (arrays: readonly Uint8Array[]) => arrays.map((a) => Uint8Array.from(a));
const MiB = 1024 * 1024;

let tmpDir: string;
beforeEach(() => {
  tmpDir = mkdtempSync(join(tmpdir(), "sluice-deserializer-"));
});
afterEach(() => {
  rmSync(tmpDir, { recursive: true, force: true });
});

function spillFiles(): string[] {
  return readdirSync(tmpDir).filter((name) => name.endsWith(SPILL_FILE_SUFFIX));
}

/** An unpooled buffer over a copy of `bytes` that counts its recycles. */
function countedBuffer(bytes: Uint8Array, counter: { recycled: number }): NetworkBuffer {
  const segment = MemorySegment.allocateUnpooled(bytes.length);
  segment.memory.set(bytes);
  return new NetworkBuffer(
    segment,
    { recycle: () => void counter.recycled++ },
    undefined,
    bytes.length,
  );
}

/** Small fixed records covering empty, tiny and multi-byte payloads. */
const FIXED_RECORDS: readonly Uint8Array[] = [
  new Uint8Array(0),
  Uint8Array.of(7),
  Uint8Array.of(1, 2, 3),
  new Uint8Array(0),
  patternBytes(13, 42),
  Uint8Array.of(0xff, 0xfe, 0x00, 0x80),
];

describe("SpillingAdaptiveSpanningRecordDeserializer", () => {
  it("decodes records packed in one buffer straight from the segment, LAST for the final one", () => {
    const framed = frameAll(["a", "bc", ""], StringSerializer.INSTANCE);
    const counter = { recycled: 0 };
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    deserializer.setNextBuffer(countedBuffer(framed, counter));
    const holder: RecordHolder<string> = { value: undefined };
    const results: DeserializationResult[] = [];
    const values: (string | undefined)[] = [];
    for (let i = 0; i < 3; i++) {
      results.push(deserializer.getNextRecord(StringSerializer.INSTANCE, holder));
      values.push(holder.value);
    }
    expect(values).toEqual(["a", "bc", ""]);
    expect(results).toEqual([
      DeserializationResult.INTERMEDIATE_RECORD_FROM_BUFFER,
      DeserializationResult.INTERMEDIATE_RECORD_FROM_BUFFER,
      DeserializationResult.LAST_RECORD_FROM_BUFFER,
    ]);
    expect(counter.recycled).toBe(1);
    expect(deserializer.hasUnfinishedData()).toBe(false);
  });

  it("reports PARTIAL_RECORD and recycles the buffer when a record continues in the next one", () => {
    const framed = frameAll([patternBytes(10, 1)], BytesSerializer.INSTANCE);
    const counter = { recycled: 0 };
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    const holder: RecordHolder<Uint8Array> = { value: Uint8Array.of(9) };
    deserializer.setNextBuffer(countedBuffer(framed.subarray(0, 6), counter));
    const first = deserializer.getNextRecord(BytesSerializer.INSTANCE, holder);
    expect(first).toBe(DeserializationResult.PARTIAL_RECORD);
    expect(first.isFullRecord()).toBe(false);
    expect(first.isBufferConsumed()).toBe(true);
    expect(holder.value).toBeUndefined();
    expect(counter.recycled).toBe(1);
    expect(deserializer.hasUnfinishedData()).toBe(true);

    deserializer.setNextBuffer(countedBuffer(framed.subarray(6), counter));
    expect(deserializer.getNextRecord(BytesSerializer.INSTANCE, holder)).toBe(
      DeserializationResult.LAST_RECORD_FROM_BUFFER,
    );
    expect(Uint8Array.from(holder.value as Uint8Array)).toEqual(patternBytes(10, 1));
    expect(counter.recycled).toBe(2);
    expect(deserializer.hasUnfinishedData()).toBe(false);
  });

  it("decodes every record at every single split point of the stream (two buffers)", () => {
    const framed = frameAll(FIXED_RECORDS, BytesSerializer.INSTANCE);
    const pool = new NetworkBufferPool(4, 256);
    const local = pool.createBufferPool(2, 2);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    for (let cut = 0; cut <= framed.length; cut++) {
      const records: Uint8Array[] = [];
      feedAndCollect(
        deserializer,
        pooledBufferOf(local, framed.subarray(0, cut)),
        BytesSerializer.INSTANCE,
        records,
      );
      feedAndCollect(
        deserializer,
        pooledBufferOf(local, framed.subarray(cut)),
        BytesSerializer.INSTANCE,
        records,
      );
      expect(plain(records), `split at ${cut}`).toEqual(FIXED_RECORDS);
      expect(deserializer.hasUnfinishedData()).toBe(false);
    }
    local.destroy();
    expect(pool).toHaveAllSegmentsAvailable();
  });

  it("decodes every record at every pair of split points of a tiny stream (three buffers)", () => {
    const values = [new Uint8Array(0), Uint8Array.of(5), Uint8Array.of(1, 2, 3, 4, 5, 6)];
    const framed = frameAll(values, BytesSerializer.INSTANCE);
    const pool = new NetworkBufferPool(4, 64);
    const local = pool.createBufferPool(3, 3);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    let combinations = 0;
    for (let a = 0; a <= framed.length; a++) {
      for (let b = a; b <= framed.length; b++) {
        const bytesRecords: Uint8Array[] = [];
        const decoded: Uint8Array[] = [];
        // Alternate the two read APIs so both are covered at every split.
        const useBytes = (a + b) % 2 === 0;
        for (const part of [framed.subarray(0, a), framed.subarray(a, b), framed.subarray(b)]) {
          const buffer = pooledBufferOf(local, part);
          if (useBytes) feedAndCollectBytes(deserializer, buffer, bytesRecords);
          else feedAndCollect(deserializer, buffer, BytesSerializer.INSTANCE, decoded);
        }
        if (useBytes) {
          // Raw payloads are BytesSerializer's own format: int32 length + bytes.
          expect(
            bytesRecords.map((r) => r.subarray(4)),
            `splits ${a}/${b}`,
          ).toEqual(values);
        } else {
          expect(plain(decoded), `splits ${a}/${b}`).toEqual(values);
        }
        expect(
          local.getNumberOfAvailableMemorySegments() + pool.getNumberOfAvailableMemorySegments(),
        ).toBe(4);
        combinations++;
      }
    }
    expect(combinations).toBe(((framed.length + 1) * (framed.length + 2)) / 2);
    local.destroy();
    expect(pool).toHaveAllSegmentsAvailable();
  });

  it("round-trips random records through random segment sizes and random buffer splits", () => {
    const smallOrMedium = fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: 0, max: 200 }) },
      { weight: 2, arbitrary: fc.integer({ min: 201, max: 70 * KiB }) },
    );
    const large = fc.integer({ min: MiB, max: MiB + 64 * KiB });
    const recordSpec = fc.record({ length: smallOrMedium, seed: fc.integer() });
    const scenario = fc.record({
      records: fc.array(recordSpec, { maxLength: 30 }),
      // At least one record above 1 MiB in most runs; inserted at random positions.
      large: fc.array(fc.record({ length: large, seed: fc.integer(), at: fc.nat() }), {
        minLength: 0,
        maxLength: 2,
      }),
      // Log-uniform segment size in [64 B, 64 KiB].
      segmentSize: fc
        .integer({ min: 6, max: 15 })
        .chain((e) => fc.integer({ min: 2 ** e, max: 2 ** (e + 1) })),
      // Cut points (fractions of each buffer) to re-split buffers with readOnlySlice.
      cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 3 }),
      splitEvery: fc.integer({ min: 1, max: 4 }),
      spill: fc.boolean(),
      viaBytes: fc.boolean(),
    });
    let largeRecordsSeen = 0;
    fc.assert(
      fc.property(scenario, (s) => {
        const specs = [...s.records];
        for (const big of s.large) specs.splice(big.at % (specs.length + 1), 0, big);
        const values = specs.map((spec) => patternBytes(spec.length, spec.seed));
        largeRecordsSeen += s.large.length;

        const pool = new NetworkBufferPool(4, s.segmentSize);
        const local = pool.createBufferPool(1, 4);
        const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
          tmpDirectories: [tmpDir],
          ...(s.spill ? { spillingThreshold: MIN_SPILLING_THRESHOLD } : {}),
        });
        const decoded: Uint8Array[] = [];
        const writer = new BufferBuilderWriter(
          () => local.requestBufferBuilder(),
          (buffer) => {
            const pieces =
              writer.buffersEmitted % s.splitEvery === 0
                ? splitBuffer(
                    buffer,
                    s.cuts.map((f) => Math.floor(f * buffer.readableBytes())),
                  )
                : [buffer];
            for (const piece of pieces) {
              if (s.viaBytes) {
                const raw: Uint8Array[] = [];
                feedAndCollectBytes(deserializer, piece, raw);
                for (const r of raw) decoded.push(r.subarray(4));
              } else {
                feedAndCollect(deserializer, piece, BytesSerializer.INSTANCE, decoded);
              }
            }
          },
        );
        const out = new DataOutputSerializer();
        for (const value of values)
          writer.write(serializeRecord(value, BytesSerializer.INSTANCE, out));
        writer.flush();

        expect(decoded.length).toBe(values.length);
        for (let i = 0; i < values.length; i++) {
          // Compare with Buffer.equals: toEqual on MiB-sized arrays is needlessly slow.
          expect(
            Buffer.from(decoded[i] as Uint8Array).equals(values[i] as Uint8Array),
            `record ${i}`,
          ).toBe(true);
        }
        expect(deserializer.hasUnfinishedData()).toBe(false);
        expect(spillFiles()).toEqual([]);
        local.destroy();
        expect(pool).toHaveAllSegmentsAvailable();
      }),
      { numRuns: 40 },
    );
    expect(largeRecordsSeen).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it("spills a record above the threshold to a temp file while it arrives and deletes it after", () => {
    const value = patternBytes(300 * KiB, 7);
    const framed = frameAll([value, Uint8Array.of(1, 2)], BytesSerializer.INSTANCE);
    const pool = new NetworkBufferPool(8, 4 * KiB);
    const local = pool.createBufferPool(1, 8);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
      spillingThreshold: 100 * KiB,
    });
    const decoded: Uint8Array[] = [];
    const segment = 4 * KiB;
    let fed = 0;
    let sawSpillFile = false;
    for (let offset = 0; offset < framed.length; offset += segment) {
      const part = framed.subarray(offset, offset + segment);
      feedAndCollect(deserializer, pooledBufferOf(local, part), BytesSerializer.INSTANCE, decoded);
      fed += part.length;
      if (decoded.length === 0) {
        const files = spillFiles();
        expect(files).toHaveLength(1);
        // The record's bytes go to disk as they arrive (4 bytes of record length excluded).
        expect(statSync(join(tmpDir, files[0] as string)).size).toBe(fed - 4);
        sawSpillFile = true;
      }
    }
    expect(sawSpillFile).toBe(true);
    expect(decoded).toHaveLength(2);
    expect(Buffer.from(decoded[0] as Uint8Array).equals(value)).toBe(true);
    expect(Array.from(decoded[1] as Uint8Array)).toEqual([1, 2]);
    expect(spillFiles()).toEqual([]);
    local.destroy();
    expect(pool).toHaveAllSegmentsAvailable();
  });

  it("keeps records up to the threshold in memory (no spill file)", () => {
    const value = patternBytes(100 * KiB - 4, 3); // payload = 4 + length = exactly the threshold
    const framed = frameAll([value], BytesSerializer.INSTANCE);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
      spillingThreshold: 100 * KiB,
    });
    const decoded: Uint8Array[] = [];
    const counter = { recycled: 0 };
    for (let offset = 0; offset < framed.length; offset += 8 * KiB) {
      feedAndCollect(
        deserializer,
        countedBuffer(framed.subarray(offset, offset + 8 * KiB), counter),
        BytesSerializer.INSTANCE,
        decoded,
      );
      expect(spillFiles()).toEqual([]);
    }
    expect(Buffer.from(decoded[0] as Uint8Array).equals(value)).toBe(true);
  });

  it("clear() in the middle of a spilled record deletes the file and recycles the held buffer", () => {
    const framed = frameAll([patternBytes(300 * KiB, 9)], BytesSerializer.INSTANCE);
    const pool = new NetworkBufferPool(4, 4 * KiB);
    const local = pool.createBufferPool(1, 4);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
      spillingThreshold: 100 * KiB,
    });
    const decoded: Uint8Array[] = [];
    for (let offset = 0; offset < 20 * 4 * KiB; offset += 4 * KiB) {
      feedAndCollect(
        deserializer,
        pooledBufferOf(local, framed.subarray(offset, offset + 4 * KiB)),
        BytesSerializer.INSTANCE,
        decoded,
      );
    }
    // A buffer handed over but not read yet is held by the deserializer.
    deserializer.setNextBuffer(pooledBufferOf(local, framed.subarray(80 * KiB, 84 * KiB)));
    expect(spillFiles()).toHaveLength(1);
    expect(deserializer.hasUnfinishedData()).toBe(true);
    expect(
      pool.getNumberOfAvailableMemorySegments() + local.getNumberOfAvailableMemorySegments(),
    ).toBe(3);

    deserializer.clear();
    expect(spillFiles()).toEqual([]);
    expect(deserializer.hasUnfinishedData()).toBe(false);
    expect(decoded).toEqual([]);
    deserializer.clear(); // idempotent
    local.destroy();
    expect(pool).toHaveAllSegmentsAvailable();
  });

  it("after clear() reads a fresh stream from its first byte", () => {
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    const counter = { recycled: 0 };
    const framed = frameAll([123, 456], Int32Serializer.INSTANCE);
    const decoded: number[] = [];
    feedAndCollect(
      deserializer,
      countedBuffer(framed.subarray(0, 6), counter),
      Int32Serializer.INSTANCE,
      decoded,
    );
    deserializer.clear();
    feedAndCollect(deserializer, countedBuffer(framed, counter), Int32Serializer.INSTANCE, decoded);
    expect(decoded).toEqual([123, 456]);
    expect(counter.recycled).toBe(2);
  });

  it("fails a length above the maximum record size with RecordTooLargeError before allocating", () => {
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
      maxRecordSize: 1000,
    });
    const counter = { recycled: 0 };
    const bytes = Buffer.alloc(12);
    bytes.writeInt32BE(3, 0); // a valid 3-byte record first
    bytes.writeInt32BE(1001, 7);
    deserializer.setNextBuffer(countedBuffer(bytes, counter));
    const holder: RecordHolder<Uint8Array> = { value: undefined };
    expect(deserializer.getNextRecordBytes(holder).isFullRecord()).toBe(true);
    const error = expectError(
      () => deserializer.getNextRecordBytes(holder),
      RecordTooLargeError,
      ErrorCodes.RECORD_TOO_LARGE,
    );
    expect(error.message).toContain("1001");
    expect(error.message).toContain("1000");
    expect(error.message).toContain(MAX_RECORD_SIZE_KEY);
    expect(error.message).toContain("byte 7 of the channel's data");
    deserializer.clear();
    expect(counter.recycled).toBe(1);
  });

  it("fails an oversized length that is split across buffers, too", () => {
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
      maxRecordSize: 200 * KiB,
    });
    const counter = { recycled: 0 };
    const length = Buffer.alloc(4);
    length.writeInt32BE(0x7fff_0000, 0);
    const holder: RecordHolder<Uint8Array> = { value: undefined };
    deserializer.setNextBuffer(countedBuffer(length.subarray(0, 1), counter));
    expect(deserializer.getNextRecordBytes(holder)).toBe(DeserializationResult.PARTIAL_RECORD);
    deserializer.setNextBuffer(countedBuffer(length.subarray(1), counter));
    expect(() => deserializer.getNextRecordBytes(holder)).toThrow(
      expect.objectContaining({ code: ErrorCodes.RECORD_TOO_LARGE }),
    );
    expect(spillFiles()).toEqual([]);
    deserializer.clear();
    expect(counter.recycled).toBe(2);
  });

  it("fails a negative length with a SerializationError naming the length and position", () => {
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    const counter = { recycled: 0 };
    const bytes = Buffer.from([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe, 1, 2]);
    deserializer.setNextBuffer(countedBuffer(bytes, counter));
    const holder: RecordHolder<Uint8Array> = { value: undefined };
    expect(deserializer.getNextRecordBytes(holder).isFullRecord()).toBe(true);
    expect(holder.value).toHaveLength(0);
    const error = expectError(
      () => deserializer.getNextRecordBytes(holder),
      SerializationError,
      ErrorCodes.SERIALIZATION,
    );
    expect(error.message).toContain("negative record length -2");
    expect(error.message).toContain(
      "byte 4 of the channel's data (offset 4 of the current buffer)",
    );
    deserializer.clear();
    expect(counter.recycled).toBe(1);
  });

  it("fails a serializer that reads fewer bytes than the record holds, and still recycles", () => {
    const framed = frameAll([5n], Int64Serializer.INSTANCE);
    const counter = { recycled: 0 };
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    deserializer.setNextBuffer(countedBuffer(framed, counter));
    expect(() =>
      deserializer.getNextRecord(Int32Serializer.INSTANCE, { value: undefined }),
    ).toThrow(/serializer 'int32' read only 4 of the 8 bytes/);
    expect(counter.recycled).toBe(1);
  });

  it("fails a serializer that reads past the record's end with the record's context", () => {
    const framed = frameAll([5], Int32Serializer.INSTANCE);
    const counter = { recycled: 0 };
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    deserializer.setNextBuffer(countedBuffer(Buffer.concat([framed, framed]), counter));
    const error = expectError(
      () => deserializer.getNextRecord(Int64Serializer.INSTANCE, { value: undefined }),
      SerializationError,
      ErrorCodes.SERIALIZATION,
    );
    expect(error.message).toMatch(/4-byte record .* serializer 'int64': cannot read 8 bytes/);
    deserializer.clear();
    expect(counter.recycled).toBe(1);
  });

  it("decodes composite records such as the demo's (word, count)", () => {
    const wordCount = new ObjectSerializer({
      word: StringSerializer.INSTANCE,
      count: Int64Serializer.INSTANCE,
    });
    const values = [
      { word: "to", count: 1n },
      { word: "be", count: 2n },
      { word: "ünïcödé 🦀", count: -(2n ** 63n) },
    ];
    const framed = frameAll(values, wordCount);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    const counter = { recycled: 0 };
    const decoded: (typeof values)[number][] = [];
    feedAndCollect(
      deserializer,
      countedBuffer(framed.subarray(0, 11), counter),
      wordCount,
      decoded,
    );
    feedAndCollect(deserializer, countedBuffer(framed.subarray(11), counter), wordCount, decoded);
    expect(decoded).toEqual(values);
  });

  it("keeps a getNextRecordBytes view valid after the buffer holding it was recycled", () => {
    const framed = frameAll(
      [Uint8Array.of(1, 2, 3), Uint8Array.of(4, 5)],
      BytesSerializer.INSTANCE,
    );
    const pool = new NetworkBufferPool(2, 64);
    const local = pool.createBufferPool(1, 2);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    const buffer = pooledBufferOf(local, framed);
    const segmentMemory = buffer.getMemorySegment().memory;
    deserializer.setNextBuffer(buffer);
    const holder: RecordHolder<Uint8Array> = { value: undefined };
    expect(deserializer.getNextRecordBytes(holder)).toBe(
      DeserializationResult.INTERMEDIATE_RECORD_FROM_BUFFER,
    );
    // Mid-buffer: a view straight into the segment (no copy).
    expect(holder.value?.buffer).toBe(segmentMemory.buffer);
    expect(deserializer.getNextRecordBytes(holder)).toBe(
      DeserializationResult.LAST_RECORD_FROM_BUFFER,
    );
    expect(buffer.isRecycled()).toBe(true);
    // The segment is reused and overwritten; the view must not change.
    const reused = local.requestBuffer() as NetworkBuffer;
    reused.writableView().fill(0xee);
    expect(Array.from(holder.value as Uint8Array)).toEqual([0, 0, 0, 2, 4, 5]);
    reused.recycleBuffer();
    local.destroy();
    expect(pool).toHaveAllSegmentsAvailable();
  });

  it("hands out the unconsumed bytes (partial record with its length, then unread bytes)", () => {
    const values = [patternBytes(40, 1), patternBytes(20, 2)];
    const framed = frameAll(values, BytesSerializer.INSTANCE);
    const counter = { recycled: 0 };
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    expect(deserializer.getUnconsumedBuffer()).toBeUndefined();
    // Split inside the length prefix, then inside the record.
    for (const [from, to] of [
      [0, 2],
      [2, 30],
    ] as const) {
      feedAndCollect(
        deserializer,
        countedBuffer(framed.subarray(from, to), counter),
        BytesSerializer.INSTANCE,
        [],
      );
      const unconsumed = deserializer.getUnconsumedBuffer() as NetworkBuffer;
      expect(Array.from(unconsumed.readableView())).toEqual(Array.from(framed.subarray(0, to)));
      expect(unconsumed.getRecycler()).toBe(FreeingBufferRecycler);
    }
    // With unread bytes in the current buffer: the rest of record 1 and all of record 2.
    deserializer.setNextBuffer(countedBuffer(framed.subarray(30), counter));
    const unconsumed = deserializer.getUnconsumedBuffer() as NetworkBuffer;
    expect(Array.from(unconsumed.readableView())).toEqual(Array.from(framed));
    const decoded: Uint8Array[] = [];
    const holder: RecordHolder<Uint8Array> = { value: undefined };
    for (;;) {
      const result = deserializer.getNextRecord(BytesSerializer.INSTANCE, holder);
      if (result.isFullRecord()) decoded.push(holder.value as Uint8Array);
      if (result.isBufferConsumed()) break;
    }
    expect(plain(decoded)).toEqual(values);
    expect(deserializer.getUnconsumedBuffer()).toBeUndefined();
  });

  it("includes spilled bytes in the unconsumed buffer", () => {
    const value = patternBytes(150 * KiB, 5);
    const framed = frameAll([value], BytesSerializer.INSTANCE);
    const counter = { recycled: 0 };
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
      spillingThreshold: 100 * KiB,
    });
    feedAndCollect(
      deserializer,
      countedBuffer(framed.subarray(0, 50 * KiB), counter),
      BytesSerializer.INSTANCE,
      [],
    );
    expect(spillFiles()).toHaveLength(1);
    const unconsumed = deserializer.getUnconsumedBuffer() as NetworkBuffer;
    expect(unconsumed.readableView().equals(framed.subarray(0, 50 * KiB))).toBe(true);
    deserializer.clear();
    expect(spillFiles()).toEqual([]);
  });

  it("refuses a new buffer while the previous one has unread bytes, leaving it to the caller", () => {
    const framed = frameAll([1, 2], Int32Serializer.INSTANCE);
    const counter = { recycled: 0 };
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    deserializer.setNextBuffer(countedBuffer(framed, counter));
    deserializer.getNextRecord(Int32Serializer.INSTANCE, { value: undefined });
    const next = countedBuffer(framed, counter);
    expect(() => deserializer.setNextBuffer(next)).toThrow(
      expect.objectContaining({ code: ErrorCodes.ILLEGAL_STATE }),
    );
    expect(next.isRecycled()).toBe(false);
    next.recycleBuffer();
    deserializer.clear();
    expect(counter.recycled).toBe(2);
  });

  it("recycles an empty buffer as consumed and returns PARTIAL_RECORD", () => {
    const counter = { recycled: 0 };
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    deserializer.setNextBuffer(countedBuffer(new Uint8Array(0), counter));
    expect(deserializer.getNextRecordBytes({ value: undefined })).toBe(
      DeserializationResult.PARTIAL_RECORD,
    );
    expect(counter.recycled).toBe(1);
    expect(deserializer.hasUnfinishedData()).toBe(false);
  });

  it("reads a buffer from its reader index on", () => {
    const framed = frameAll([77], Int32Serializer.INSTANCE);
    const counter = { recycled: 0 };
    const buffer = countedBuffer(Buffer.concat([Buffer.from([9, 9, 9]), framed]), counter);
    buffer.setReaderIndex(3);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    const decoded: number[] = [];
    feedAndCollect(deserializer, buffer, Int32Serializer.INSTANCE, decoded);
    expect(decoded).toEqual([77]);
  });

  it("rejects a spilling threshold below 100 KiB and an empty temp directory list", () => {
    expect(
      () => new SpillingAdaptiveSpanningRecordDeserializer({ spillingThreshold: 100 * KiB - 1 }),
    ).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }));
    expect(() => new SpillingAdaptiveSpanningRecordDeserializer({ tmpDirectories: [] })).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }),
    );
  });

  it("reports a spill directory that cannot be written with the file's path", () => {
    const missing = join(tmpDir, "does-not-exist");
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [missing],
      spillingThreshold: 100 * KiB,
    });
    const framed = frameAll([patternBytes(200 * KiB, 1)], BytesSerializer.INSTANCE);
    const counter = { recycled: 0 };
    deserializer.setNextBuffer(countedBuffer(framed.subarray(0, KiB), counter));
    expect(() => deserializer.getNextRecordBytes({ value: undefined })).toThrow(
      expect.objectContaining({
        code: ErrorCodes.SERIALIZATION,
        message: expect.stringContaining(missing),
      }),
    );
    deserializer.clear();
    expect(counter.recycled).toBe(1);
    expect(existsSync(missing)).toBe(false);
  });
});

describe("SpillingAdaptiveSpanningRecordDeserializer reading without allocating", () => {
  /** A mutable pair the reusing path fills: a number and a copy of 3 bytes. */
  interface Pair {
    n: number;
    readonly tail: Uint8Array;
  }
  const PAIR: TypeSerializer<Pair> = {
    name: "pair",
    serialize(value, out) {
      out.writeInt(value.n);
      out.writeBytes(value.tail);
    },
    deserialize(input) {
      const tail = new Uint8Array(3);
      const n = input.readInt();
      input.readFullyInto(tail, 0, 3);
      return { n, tail };
    },
    deserializeInto(reuse, input) {
      reuse.n = input.readInt();
      input.readFullyInto(reuse.tail, 0, 3);
      return reuse;
    },
  };
  const values: Pair[] = [1, 2, 3, 4, 5].map((n) => ({ n, tail: Uint8Array.of(n, n + 1, n + 2) }));

  /** Every record of `values`, framed, cut into buffers of 5 bytes: records span buffers. */
  function spanningBuffers(counter: { recycled: number }): NetworkBuffer[] {
    const framed = frameAll(values, PAIR);
    const buffers: NetworkBuffer[] = [];
    for (let at = 0; at < framed.length; at += 5) {
      buffers.push(countedBuffer(framed.subarray(at, at + 5), counter));
    }
    return buffers;
  }

  it("decodes every record into the one object it is given, also records spanning buffers", () => {
    const counter = { recycled: 0 };
    const buffers = spanningBuffers(counter);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    const reuse: Pair = { n: -1, tail: new Uint8Array(3) };
    const holder: RecordHolder<Pair> = { value: undefined };
    const seen: { n: number; tail: number[] }[] = [];
    for (const buffer of buffers) {
      deserializer.setNextBuffer(buffer);
      for (;;) {
        const result = deserializer.getNextRecordInto(PAIR, reuse, holder);
        if (result.isFullRecord()) {
          expect(holder.value).toBe(reuse);
          seen.push({ n: reuse.n, tail: [...reuse.tail] });
        }
        if (result.isBufferConsumed()) break;
      }
    }
    expect(seen).toEqual(values.map((v) => ({ n: v.n, tail: [...v.tail] })));
    expect(counter.recycled).toBe(buffers.length);
    deserializer.clear();
  });

  it("falls back to deserialize for a serializer without deserializeInto", () => {
    const counter = { recycled: 0 };
    const framed = frameAll([5, 6], Int32Serializer.INSTANCE);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    deserializer.setNextBuffer(countedBuffer(framed, counter));
    const holder: RecordHolder<number> = { value: undefined };
    const got: number[] = [];
    for (;;) {
      const result = deserializer.getNextRecordInto(Int32Serializer.INSTANCE, 0, holder);
      if (result.isFullRecord()) got.push(holder.value as number);
      if (result.isBufferConsumed()) break;
    }
    expect(got).toEqual([5, 6]);
    expect(counter.recycled).toBe(1);
  });

  it("hands each record to a view reader in place, recycling each buffer once read", () => {
    const counter = { recycled: 0 };
    const buffers = spanningBuffers(counter);
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    const seen: number[] = [];
    const results: DeserializationResult[] = [];
    // Reads only the int of each record and leaves the tail unread: a view reader may skip.
    const read = (input: DataInputDeserializer) => {
      expect(input.available()).toBe(7);
      seen.push(input.readInt());
    };
    for (const buffer of buffers) {
      deserializer.setNextBuffer(buffer);
      for (;;) {
        const result = deserializer.readNextRecord(read);
        results.push(result);
        if (result.isBufferConsumed()) break;
      }
    }
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(results.filter((r) => r.isFullRecord())).toHaveLength(5);
    expect(counter.recycled).toBe(buffers.length);
    expect(deserializer.hasUnfinishedData()).toBe(false);
  });

  it("recycles the buffer even when the view reader throws", () => {
    const counter = { recycled: 0 };
    const deserializer = new SpillingAdaptiveSpanningRecordDeserializer({
      tmpDirectories: [tmpDir],
    });
    deserializer.setNextBuffer(countedBuffer(frameAll([9], Int32Serializer.INSTANCE), counter));
    expect(() =>
      deserializer.readNextRecord(() => {
        throw new Error("reader failed");
      }),
    ).toThrow("reader failed");
    expect(counter.recycled).toBe(1);
  });
});
