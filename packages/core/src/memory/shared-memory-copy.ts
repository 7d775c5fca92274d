/**
 * Copies between ordinary memory and the `SharedArrayBuffer` a task manager's slot threads share
 * (see docs/architecture.md, "Task slots on threads").
 *
 * V8 copies bytes to or from shared memory as relaxed atomic accesses (another thread may write
 * them meanwhile): a word at a time when the source and the destination addresses are equal
 * modulo the word size (8 bytes), and one byte at a time otherwise. Measured on Node 20 for a
 * 100-byte record: 13 ns between ordinary buffers, 16 ns into shared memory at matching
 * alignment, 29 ns at 4-byte and 43 ns at 1-byte mismatch. Records sit in a network buffer at
 * whatever offset the records before them left, so a copy that does not choose its alignment
 * pays the byte loop on most records, and a large copy at a mismatch moves 3.5 GB/s instead of
 * 19-26 GB/s (32 KiB, measured the same way). The functions here choose the alignment.
 */

/** Node's `Buffer.poolSize`: values below half of it share a slab, as `Buffer.from` does. */
const SLAB_BYTES = 8 * 1024;
const WORD_MASK = 7;

/**
 * Shorter copies at a mismatch go straight: below this, the two copies through ordinary memory
 * cost about what the byte loop does.
 */
export const MIN_REALIGNED_COPY_BYTES = 256;
/** The most bytes one pass through the bounce buffer moves. */
const BOUNCE_BYTES = 64 * 1024;

const bounce = new ArrayBuffer(BOUNCE_BYTES + WORD_MASK);
let slab = new ArrayBuffer(SLAB_BYTES);
let slabUsed = 0;

/**
 * A copy of `bytes` the caller owns, as a `Buffer`. For bytes of shared memory, the copy starts at
 * the same offset modulo 8 as its source, so V8 copies it a word at a time; small copies share an
 * 8 KiB slab as `Buffer.from`'s do (a value keeps its slab alive). Other bytes are copied with
 * `Buffer.from`.
 */
export function copyOutOfSharedMemory(bytes: Uint8Array): Buffer {
  if (!(bytes.buffer instanceof SharedArrayBuffer)) return Buffer.from(bytes);
  const length = bytes.length;
  const phase = bytes.byteOffset & WORD_MASK;
  let copy: Buffer;
  if (length < SLAB_BYTES >>> 1) {
    let offset = ((slabUsed + WORD_MASK) & ~WORD_MASK) | phase;
    if (offset + length > SLAB_BYTES) {
      slab = new ArrayBuffer(SLAB_BYTES);
      offset = phase;
    }
    slabUsed = offset + length;
    copy = Buffer.from(slab, offset, length);
  } else {
    copy = Buffer.from(new ArrayBuffer(length + phase), phase, length);
  }
  copy.set(bytes);
  return copy;
}

/**
 * Copies `source[sourceStart, sourceEnd)` into `target` at `targetStart`, as `Buffer.copy` does
 * (the ranges must be valid and not overlap). A copy of at least 256 bytes between shared and
 * ordinary memory whose addresses disagree modulo 8 goes through ordinary memory at the shared
 * side's alignment: two copies a word at a time (the one in ordinary memory is a plain `memcpy`)
 * instead of one a byte at a time.
 */
export function copyBytes(
  source: Uint8Array,
  target: Uint8Array,
  targetStart: number,
  sourceStart: number,
  sourceEnd: number,
): void {
  const length = sourceEnd - sourceStart;
  const from = source.byteOffset + sourceStart;
  const to = target.byteOffset + targetStart;
  if (length < MIN_REALIGNED_COPY_BYTES || ((from ^ to) & WORD_MASK) === 0) {
    target.set(source.subarray(sourceStart, sourceEnd), targetStart);
    return;
  }
  const sourceShared = source.buffer instanceof SharedArrayBuffer;
  const targetShared = target.buffer instanceof SharedArrayBuffer;
  if (sourceShared === targetShared) {
    // Both ordinary: a plain memcpy. Both shared: no alignment suits both sides.
    target.set(source.subarray(sourceStart, sourceEnd), targetStart);
    return;
  }
  const phase = (sourceShared ? from : to) & WORD_MASK;
  for (let done = 0; done < length; done += BOUNCE_BYTES) {
    const n = Math.min(BOUNCE_BYTES, length - done);
    const view = new Uint8Array(bounce, phase, n);
    view.set(source.subarray(sourceStart + done, sourceStart + done + n));
    target.set(view, targetStart + done);
  }
}
