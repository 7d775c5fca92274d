import type {
  BlockCompressionFactory,
  BlockCompressor,
  BlockDecompressor,
} from "./block-compression-factory.js";
import { loadCodecBinding } from "./codec-binding.js";
import { COMPRESSION_HEADER_LENGTH, writeCompressionHeader } from "./compression-header.js";

/** The part of `lz4-napi` used here: LZ4 blocks with the original length prepended (LE). */
interface Lz4Binding {
  compressSync(data: Buffer): Buffer;
  uncompressSync(data: Uint8Array): Buffer;
}

/** Bytes `lz4-napi` prepends to a block: the original length, int32 little-endian. */
const PREPENDED_SIZE_BYTES = 4;

/**
 * LZ4 (Flink's default codec) through `lz4-napi`. Its blocks carry the original length in front,
 * as int32 little-endian — exactly the second field of the compression header — so the payload
 * is the block length, then `lz4-napi`'s output as is, and decompression hands the payload from
 * its fifth byte to the binding without a copy. The binding allocates the output from that
 * length, which the caller checked against the buffer size first.
 */
export class Lz4BlockCompressionFactory implements BlockCompressionFactory {
  readonly codec = "LZ4" as const;
  private readonly binding = loadCodecBinding<Lz4Binding>("LZ4", "lz4-napi");

  getCompressor(): BlockCompressor {
    const binding = this.binding;
    return {
      compress(source: Buffer): Buffer {
        const block = binding.compressSync(source);
        const payload = Buffer.allocUnsafe(PREPENDED_SIZE_BYTES + block.length);
        writeCompressionHeader(payload, block.length - PREPENDED_SIZE_BYTES, source.length);
        block.copy(payload, PREPENDED_SIZE_BYTES);
        return payload;
      },
    };
  }

  getDecompressor(): BlockDecompressor {
    const binding = this.binding;
    return {
      decompress(payload: Buffer): Buffer {
        // From the original-length field on, the payload is lz4-napi's own format.
        return binding.uncompressSync(
          payload.subarray(COMPRESSION_HEADER_LENGTH - PREPENDED_SIZE_BYTES),
        );
      },
    };
  }
}
