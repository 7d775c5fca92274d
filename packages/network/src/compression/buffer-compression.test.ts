import { randomBytes } from "node:crypto";
import {
  DataType,
  ErrorCodes,
  FreeingBufferRecycler,
  isSluiceError,
  MemorySegment,
  NetworkBuffer,
  NetworkBufferPool,
} from "@sluice/core";
import { describe, expect, it } from "vitest";
import { createBlockCompressionFactory } from "./block-compression-factory.js";
import { BufferCompressor } from "./buffer-compressor.js";
import { BufferDecompressor } from "./buffer-decompressor.js";
import { COMPRESSION_HEADER_LENGTH } from "./compression-header.js";
import { zstdFrameBound } from "./zstd-block-compression-factory.js";

const SEGMENT_SIZE = 32 * 1024;

/** Word-like text: what a word count shuffles. */
function words(bytes: number): Buffer {
  const vocabulary = ["shuffle", "credit", "buffer", "sluice", "flink", "partition", "gate", "a"];
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    const word = vocabulary[(i * 7 + (i >> 3)) % vocabulary.length] as string;
    parts.push(word);
    length += word.length + 1;
  }
  return Buffer.from(parts.join(" ")).subarray(0, bytes);
}

function dataBuffer(pool: NetworkBufferPool, bytes: Buffer): NetworkBuffer {
  const segment = pool.requestUnpooledMemorySegments(1)[0] as MemorySegment;
  segment.memory.set(bytes, 0);
  return new NetworkBuffer(
    segment,
    { recycle: (s) => pool.recycleUnpooledMemorySegments([s]) },
    DataType.DATA_BUFFER,
    bytes.length,
  );
}

function expectDecompressionError(run: () => void, pattern: RegExp): void {
  try {
    run();
  } catch (error) {
    expect(isSluiceError(error, ErrorCodes.BUFFER_DECOMPRESSION)).toBe(true);
    expect((error as Error).name).toBe("BufferDecompressionError");
    expect((error as Error).message).toMatch(pattern);
    return;
  }
  throw new Error("expected a BufferDecompressionError");
}

for (const codec of ["LZ4", "ZSTD"] as const) {
  describe(`BufferCompressor and BufferDecompressor with ${codec}`, () => {
    const factory = createBlockCompressionFactory(codec);
    if (factory === undefined) throw new Error("no factory");

    it("round-trips a data buffer through its compressed form, in place in a pooled segment", () => {
      const pool = new NetworkBufferPool(4, SEGMENT_SIZE);
      const original = words(SEGMENT_SIZE);
      const buffer = dataBuffer(pool, original);
      const compressor = new BufferCompressor(factory);
      const compressed = compressor.compressToIntermediateBuffer(buffer);
      expect(compressed).not.toBe(buffer);
      expect(compressed.isCompressed()).toBe(true);
      expect(compressed.getDataType()).toBe(DataType.DATA_BUFFER);
      expect(compressed.getSize()).toBeLessThan(original.length / 2);
      expect(compressor.getNumberOfBytesBeforeCompression()).toBe(original.length);
      expect(compressor.getNumberOfBytesAfterCompression()).toBe(compressed.getSize());

      // The receiver gets the compressed bytes in a credited buffer of its own pool.
      const received = dataBuffer(pool, compressed.view());
      received.setCompressed(true);
      new BufferDecompressor(factory).decompressToOriginalBuffer(received, "test channel");
      expect(received.isCompressed()).toBe(false);
      expect(received.view().equals(original)).toBe(true);
      buffer.recycleBuffer();
      compressed.recycleBuffer();
      received.recycleBuffer();
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(4);
    });

    it("keeps a buffer uncompressed when compression would not make it smaller", () => {
      const pool = new NetworkBufferPool(1, SEGMENT_SIZE);
      const buffer = dataBuffer(pool, randomBytes(4096));
      const compressor = new BufferCompressor(factory);
      expect(compressor.compressToIntermediateBuffer(buffer)).toBe(buffer);
      expect(buffer.isCompressed()).toBe(false);
      expect(compressor.getNumberOfBytesAfterCompression()).toBe(4096);
      buffer.recycleBuffer();
    });

    it("refuses events, empty buffers and buffers that are already compressed", () => {
      const compressor = new BufferCompressor(factory);
      const event = new NetworkBuffer(
        MemorySegment.allocateUnpooled(4),
        FreeingBufferRecycler,
        DataType.EVENT_BUFFER,
        4,
      );
      expect(() => compressor.compressToIntermediateBuffer(event)).toThrow(/event/);
      const empty = new NetworkBuffer(MemorySegment.allocateUnpooled(16), FreeingBufferRecycler);
      expect(() => compressor.compressToIntermediateBuffer(empty)).toThrow(/empty/);
      const compressed = new NetworkBuffer(
        MemorySegment.allocateUnpooled(16),
        FreeingBufferRecycler,
        DataType.DATA_BUFFER,
        16,
        true,
      );
      expect(() => compressor.compressToIntermediateBuffer(compressed)).toThrow(/already/);
    });

    it("fails with a named error on a corrupt codec block", () => {
      const pool = new NetworkBufferPool(2, SEGMENT_SIZE);
      const compressed = new BufferCompressor(factory).compressToIntermediateBuffer(
        dataBuffer(pool, words(SEGMENT_SIZE)),
      );
      const bytes = Buffer.from(compressed.view());
      // Keep the header, scramble the block.
      for (let i = COMPRESSION_HEADER_LENGTH; i < bytes.length; i++) bytes[i] = (i * 31) & 0xff;
      const received = dataBuffer(pool, bytes);
      received.setCompressed(true);
      expectDecompressionError(
        () => new BufferDecompressor(factory).decompressToOriginalBuffer(received, "channel #3"),
        /channel #3/,
      );
    });

    it("fails with a named error when the header announces more than a segment or a wrong block length", () => {
      const pool = new NetworkBufferPool(2, SEGMENT_SIZE);
      const compressed = new BufferCompressor(factory).compressToIntermediateBuffer(
        dataBuffer(pool, words(SEGMENT_SIZE)),
      );
      const oversized = Buffer.from(compressed.view());
      oversized.writeInt32LE(SEGMENT_SIZE + 1, 4);
      const tooLarge = dataBuffer(pool, oversized);
      tooLarge.setCompressed(true);
      expectDecompressionError(
        () => new BufferDecompressor(factory).decompressToOriginalBuffer(tooLarge, "c"),
        /original length 32769 out of/,
      );
      tooLarge.recycleBuffer();
      const truncated = dataBuffer(pool, Buffer.from(compressed.view()).subarray(0, 20));
      truncated.setCompressed(true);
      expectDecompressionError(
        () => new BufferDecompressor(factory).decompressToOriginalBuffer(truncated, "c"),
        /announces a/,
      );
    });
  });
}

describe("zstd frame bound", () => {
  it("rejects concatenated frames, which the binding would decode into an unbounded output", () => {
    const factory = createBlockCompressionFactory("ZSTD");
    if (factory === undefined) throw new Error("no factory");
    const compressor = factory.getCompressor();
    const frame = compressor.compress(Buffer.alloc(1000, 1)).subarray(COMPRESSION_HEADER_LENGTH);
    expect(zstdFrameBound(frame)).toBeGreaterThanOrEqual(1000);
    const bomb = compressor
      .compress(Buffer.alloc(4 * 1024 * 1024))
      .subarray(COMPRESSION_HEADER_LENGTH);
    expect(zstdFrameBound(Buffer.concat([frame, bomb]))).toMatch(/bytes after the frame/);
  });
});
