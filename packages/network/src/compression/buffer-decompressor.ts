import { BufferDecompressionError, copyBytes, type NetworkBuffer } from "@sluice/core";
import type { BlockCompressionFactory, BlockDecompressor } from "./block-compression-factory.js";
import { readCompressionHeader } from "./compression-header.js";

/**
 * Decompresses the compressed data buffers arriving at one input gate (Flink's
 * BufferDecompressor). The result is written back into the buffer's own segment — a credited
 * network buffer or a read buffer, always a whole segment — so decompression takes no buffer
 * from any pool and cannot wait for one.
 */
export class BufferDecompressor {
  readonly codec: string;
  private readonly decompressor: BlockDecompressor;

  constructor(factory: BlockCompressionFactory) {
    this.codec = factory.codec;
    this.decompressor = factory.getDecompressor();
  }

  /**
   * Replaces the compressed payload of `buffer` by the original bytes, in place, and clears its
   * compressed flag. Throws {@link BufferDecompressionError} naming `source` (the channel) when
   * the payload is corrupt, truncated, or larger than the buffer's segment once decompressed.
   */
  decompressToOriginalBuffer(buffer: NetworkBuffer, source: string): void {
    const fail = (what: string, cause?: unknown) =>
      new BufferDecompressionError(
        `${source}: compressed ${this.codec} buffer of ${buffer.readableBytes()} bytes cannot be decompressed: ${what}`,
        { cause },
      );
    if (buffer.isReadOnly() || buffer.getReaderIndex() !== 0) {
      throw fail("it is not a whole, writable buffer");
    }
    const payload = buffer.readableView();
    const header = readCompressionHeader(payload, buffer.getMaxCapacity());
    if (typeof header === "string") throw fail(header);
    let original: Buffer;
    try {
      original = this.decompressor.decompress(payload, header);
    } catch (cause) {
      throw fail((cause as Error).message, cause);
    }
    if (original.length !== header.originalLength) {
      throw fail(`it decompressed to ${original.length} bytes, not ${header.originalLength}`);
    }
    const segment = buffer.getMemorySegment();
    copyBytes(original, segment.memory, buffer.getMemorySegmentOffset(), 0, original.length);
    buffer.setSize(original.length);
    buffer.setCompressed(false);
  }
}
