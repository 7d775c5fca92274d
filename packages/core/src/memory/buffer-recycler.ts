import type { MemorySegment } from "./memory-segment.js";

/**
 * Takes back a segment once the last reference to the buffer around it is released. Each segment
 * is handed to its recycler exactly once per lease.
 */
export interface BufferRecycler {
  /** Returns `segment` to its owner. Called once when a buffer's reference count drops to zero. */
  recycle(segment: MemorySegment): void;
}

/**
 * The recycler for unpooled segments (events, exact-size copies): the memory is simply dropped
 * and left to the garbage collector, since no pool counts it.
 */
export const FreeingBufferRecycler: BufferRecycler = Object.freeze({
  recycle(): void {},
});
