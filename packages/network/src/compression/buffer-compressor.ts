import {
  FreeingBufferRecycler,
  IllegalArgumentError,
  MemorySegment,
  NetworkBuffer,
} from "@sluice/core";
import type { BlockCompressionFactory, BlockCompressor } from "./block-compression-factory.js";

/**
 * Compresses the data buffers of one result partition (Flink's BufferCompressor). A buffer is
 * only replaced by its compressed form when that is smaller; otherwise it goes out as it is, with
 * the BufferResponse's isCompressed flag 0. Events are never compressed.
 */
export class BufferCompressor {
  readonly codec: string;
  private readonly compressor: BlockCompressor;
  private bytesBefore = 0;
  private bytesAfter = 0;

  constructor(factory: BlockCompressionFactory) {
    this.codec = factory.codec;
    this.compressor = factory.getCompressor();
  }

  /**
   * The compressed form of `buffer`'s readable bytes in a new, unpooled buffer flagged compressed
   * (the caller keeps `buffer` and recycles both), or `buffer` itself when compression would not
   * make it smaller. Throws IllegalArgumentError for events, empty or already compressed buffers.
   */
  compressToIntermediateBuffer(buffer: NetworkBuffer): NetworkBuffer {
    if (!buffer.isBuffer()) {
      throw new IllegalArgumentError(`an event (${buffer}) cannot be compressed`);
    }
    if (buffer.isCompressed()) {
      throw new IllegalArgumentError(`${buffer} is already compressed`);
    }
    const original = buffer.readableBytes();
    if (original === 0) throw new IllegalArgumentError("an empty buffer cannot be compressed");
    const payload = this.compressor.compress(buffer.readableView());
    this.bytesBefore += original;
    if (payload.length >= original) {
      this.bytesAfter += original;
      return buffer;
    }
    this.bytesAfter += payload.length;
    return new NetworkBuffer(
      MemorySegment.wrap(payload),
      FreeingBufferRecycler,
      buffer.getDataType(),
      payload.length,
      true,
    );
  }

  /** Data bytes given to `compressToIntermediateBuffer` so far. */
  getNumberOfBytesBeforeCompression(): number {
    return this.bytesBefore;
  }

  /** Bytes those buffers took after compression (uncompressed ones counted as they are). */
  getNumberOfBytesAfterCompression(): number {
    return this.bytesAfter;
  }
}
