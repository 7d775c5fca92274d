/**
 * The 8-byte header in front of every compressed payload, as in Flink: the codec block's length,
 * then the original length, both int32 **little-endian** (the only little-endian fields of the
 * protocol). The codec block follows.
 */
export const COMPRESSION_HEADER_LENGTH = 8;

/** The two fields of a compression header. */
export interface CompressionHeader {
  /** Bytes of the codec block after the header. */
  readonly compressedLength: number;
  /** Bytes of the data before compression. */
  readonly originalLength: number;
}

/** Writes the header at the start of `target`. */
export function writeCompressionHeader(
  target: Buffer,
  compressedLength: number,
  originalLength: number,
): void {
  target.writeInt32LE(compressedLength, 0);
  target.writeInt32LE(originalLength, 4);
}

/**
 * Reads and checks the header of `payload`: the block must fill the rest of the payload exactly
 * and the original length must be in [1, `maxOriginalLength`]. Returns a description of what is
 * wrong instead of throwing, so the caller can name the buffer and channel in its error.
 */
export function readCompressionHeader(
  payload: Buffer,
  maxOriginalLength: number,
): CompressionHeader | string {
  if (payload.length < COMPRESSION_HEADER_LENGTH) {
    return `${payload.length} bytes cannot hold the ${COMPRESSION_HEADER_LENGTH}-byte compression header`;
  }
  const compressedLength = payload.readInt32LE(0);
  const originalLength = payload.readInt32LE(4);
  if (compressedLength !== payload.length - COMPRESSION_HEADER_LENGTH) {
    return `the header announces a ${compressedLength}-byte block, but ${payload.length - COMPRESSION_HEADER_LENGTH} bytes follow it`;
  }
  if (originalLength < 1 || originalLength > maxOriginalLength) {
    return `original length ${originalLength} out of [1, ${maxOriginalLength}]`;
  }
  return { compressedLength, originalLength };
}
