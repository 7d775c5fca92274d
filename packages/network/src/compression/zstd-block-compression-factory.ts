import type {
  BlockCompressionFactory,
  BlockCompressor,
  BlockDecompressor,
} from "./block-compression-factory.js";
import { loadCodecBinding } from "./codec-binding.js";
import {
  COMPRESSION_HEADER_LENGTH,
  type CompressionHeader,
  writeCompressionHeader,
} from "./compression-header.js";

/** The part of `@toondepauw/node-zstd` used here. */
interface ZstdBinding {
  Encoder: new (level: number) => { encodeSync(data: Buffer): Buffer };
  Decoder: new () => { decodeSync(data: Buffer): Buffer };
}

/** zstd's default level, as Flink's ZSTD codec uses. */
const ZSTD_LEVEL = 3;
const FRAME_MAGIC = 0xfd2fb528;
/** zstd never emits a block that decompresses to more than this (RFC 8878, Block_Maximum_Size). */
const MAX_BLOCK_SIZE = 128 * 1024;
const BLOCK_RAW = 0;
const BLOCK_RLE = 1;
const BLOCK_COMPRESSED = 2;
const DICTIONARY_ID_BYTES = [0, 1, 2, 4] as const;
const CONTENT_SIZE_BYTES = [0, 2, 4, 8] as const;

/**
 * An upper bound of what one zstd frame (RFC 8878) decompresses to, from its block headers alone,
 * or a description of why the bytes are not exactly one well-formed frame. The binding decodes
 * any number of concatenated frames into a growing output, so without this walk a small corrupt
 * or hostile payload could make it allocate gigabytes.
 */
export function zstdFrameBound(frame: Buffer): number | string {
  if (frame.length < 6 || frame.readUInt32LE(0) !== FRAME_MAGIC) return "no zstd frame magic";
  const descriptor = frame[4] as number;
  if ((descriptor & 0x08) !== 0) return "reserved bit of the frame header is set";
  const singleSegment = (descriptor & 0x20) !== 0;
  let position = 5;
  let windowSize = 0;
  if (!singleSegment) {
    const window = frame[position++] as number;
    const windowLog = 10 + (window >> 3);
    const base = 2 ** windowLog;
    windowSize = base + (base / 8) * (window & 7);
  }
  position += DICTIONARY_ID_BYTES[descriptor & 3] as number;
  const sizeFlag = descriptor >> 6;
  const contentSizeBytes =
    sizeFlag === 0 && singleSegment ? 1 : (CONTENT_SIZE_BYTES[sizeFlag] as number);
  let contentSize: number | undefined;
  if (contentSizeBytes > 0) {
    if (position + contentSizeBytes > frame.length) return "truncated frame header";
    if (contentSizeBytes === 8) contentSize = Number(frame.readBigUInt64LE(position));
    else contentSize = frame.readUIntLE(position, contentSizeBytes);
    if (contentSizeBytes === 2) contentSize += 256;
    position += contentSizeBytes;
  }
  if (singleSegment) windowSize = contentSize ?? 0;
  const blockMaximum = Math.min(windowSize, MAX_BLOCK_SIZE);
  let bound = 0;
  for (;;) {
    if (position + 3 > frame.length) return "truncated block header";
    const header = frame.readUIntLE(position, 3);
    position += 3;
    const last = (header & 1) === 1;
    const type = (header >> 1) & 3;
    const size = header >> 3;
    if (type === BLOCK_RAW) {
      bound += size;
      position += size;
    } else if (type === BLOCK_RLE) {
      bound += size;
      position += 1;
    } else if (type === BLOCK_COMPRESSED) {
      if (size > blockMaximum) return `compressed block of ${size} bytes exceeds ${blockMaximum}`;
      bound += blockMaximum;
      position += size;
    } else {
      return "reserved block type";
    }
    if (position > frame.length) return "truncated block";
    if (last) break;
  }
  if ((descriptor & 0x04) !== 0) position += 4;
  if (position !== frame.length) return `${frame.length - position} bytes after the frame`;
  return contentSize !== undefined ? Math.min(bound, contentSize) : bound;
}

/**
 * ZSTD through `@toondepauw/node-zstd` (prebuilt N-API binaries, no install step). The payload is
 * the compression header followed by one zstd frame; before decoding, the frame's block headers
 * are walked to bound what it can decompress to.
 */
export class ZstdBlockCompressionFactory implements BlockCompressionFactory {
  readonly codec = "ZSTD" as const;
  private readonly binding = loadCodecBinding<ZstdBinding>("ZSTD", "@toondepauw/node-zstd");

  getCompressor(): BlockCompressor {
    const encoder = new this.binding.Encoder(ZSTD_LEVEL);
    return {
      compress(source: Buffer): Buffer {
        const frame = encoder.encodeSync(source);
        const payload = Buffer.allocUnsafe(COMPRESSION_HEADER_LENGTH + frame.length);
        writeCompressionHeader(payload, frame.length, source.length);
        frame.copy(payload, COMPRESSION_HEADER_LENGTH);
        return payload;
      },
    };
  }

  getDecompressor(): BlockDecompressor {
    const decoder = new this.binding.Decoder();
    return {
      decompress(payload: Buffer, header: CompressionHeader): Buffer {
        const frame = payload.subarray(COMPRESSION_HEADER_LENGTH);
        const bound = zstdFrameBound(frame);
        if (typeof bound === "string") throw new Error(`corrupt zstd frame: ${bound}`);
        // One block of slack: a frame's bound counts every compressed block as a full block.
        if (bound > header.originalLength + MAX_BLOCK_SIZE || bound < header.originalLength) {
          throw new Error(
            `zstd frame may decompress to ${bound} bytes, not to the announced ${header.originalLength}`,
          );
        }
        return decoder.decodeSync(frame);
      },
    };
  }
}
