import type { NetworkBuffer } from "./network-buffer.js";

/**
 * Waits for a buffer from a LocalBufferPool that had none free (Flink's BufferListener). Input
 * channels use it for floating buffers: when a buffer is recycled into the pool, it is handed to
 * the first waiting listener instead of going back to the free list.
 */
export interface BufferListener {
  /**
   * Hands over `buffer`; the listener now owns it (and must recycle it if it cannot use it, e.g.
   * because its channel was released). Returns true to stay registered for more buffers.
   */
  notifyBufferAvailable(buffer: NetworkBuffer): boolean;
  /** The pool was destroyed; no buffer will ever be offered. */
  notifyBufferDestroyed(): void;
}
