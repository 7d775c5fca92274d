import { MemorySegment, RECORD_LENGTH_BYTES } from "@sluice/core";

/** `count` unpooled segments of `size` bytes. */
export function unpooledSegments(count: number, size: number): MemorySegment[] {
  return Array.from({ length: count }, () => MemorySegment.allocateUnpooled(size));
}

/** Splits the concatenation of `chunks` into the payloads of its framed records. */
export function splitFramedRecords(chunks: readonly Buffer[]): Buffer[] {
  const all = Buffer.concat(chunks);
  const result: Buffer[] = [];
  for (let at = 0; at < all.length; ) {
    const length = all.readInt32BE(at);
    result.push(all.subarray(at + RECORD_LENGTH_BYTES, at + RECORD_LENGTH_BYTES + length));
    at += RECORD_LENGTH_BYTES + length;
  }
  return result;
}
