import { ConfigurationError } from "@sluice/core";
import type { CompressionCodec } from "@sluice/runtime-api";
import type { CompressionHeader } from "./compression-header.js";
import { Lz4BlockCompressionFactory } from "./lz4-block-compression-factory.js";
import { ZstdBlockCompressionFactory } from "./zstd-block-compression-factory.js";

/**
 * Compresses one buffer's bytes with a codec (Flink's BlockCompressor) into a complete compressed
 * payload: the compression header, then the codec's block.
 */
export interface BlockCompressor {
  /** Compresses `source` into a new payload (header + codec block). */
  compress(source: Buffer): Buffer;
}

/**
 * Decompresses one compressed payload (Flink's BlockDecompressor). The caller has checked the
 * header (`readCompressionHeader`): the block fills the payload and the original length is at most
 * one buffer. Implementations make sure the codec cannot allocate much more than that for a
 * corrupt or hostile block.
 */
export interface BlockDecompressor {
  /**
   * Decompresses the block of `payload` and returns the original bytes. Throws (any error; the
   * caller wraps it) when the block is corrupt or truncated.
   */
  decompress(payload: Buffer, header: CompressionHeader): Buffer;
}

/** Creates the compressors and decompressors of one codec (Flink's BlockCompressionFactory). */
export interface BlockCompressionFactory {
  /** The codec's name as configured (`LZ4`, `ZSTD`). */
  readonly codec: Exclude<CompressionCodec, "NONE">;
  getCompressor(): BlockCompressor;
  getDecompressor(): BlockDecompressor;
}

/**
 * The factory of `codec`, or `undefined` for `NONE`. Loads the codec's binding now, so a
 * misconfigured worker fails when it creates its first compressing partition or gate.
 */
export function createBlockCompressionFactory(
  codec: CompressionCodec,
): BlockCompressionFactory | undefined {
  switch (codec) {
    case "NONE":
      return undefined;
    case "LZ4":
      return new Lz4BlockCompressionFactory();
    case "ZSTD":
      return new ZstdBlockCompressionFactory();
    default:
      throw new ConfigurationError(
        `'taskmanager.network.compression.codec': unknown codec ${String(codec)}`,
      );
  }
}
