import type { InputChannelID, NetworkBuffer } from "@sluice/core";

/**
 * Where the client-side decoder puts the payload of a data BufferResponse: a credited buffer of
 * the receiving channel, so the payload is copied once, straight from the socket chunks into it.
 */
export interface BufferResponseAllocator {
  /**
   * A buffer with at least `size` writable bytes for channel `receiverId` (one credit), or
   * `undefined` when the channel is unknown or released: the payload is then skipped. Called once
   * the frame's header passed validation, so `size` never exceeds the max frame size. The buffer
   * must be empty (size 0) and writable; ownership passes to the decoder and, once filled, to
   * `onMessage`.
   */
  allocateDataBuffer(receiverId: InputChannelID, size: number): NetworkBuffer | undefined;
  /**
   * Called after the `size` payload bytes of a BufferResponse for `receiverId` were skipped
   * because `allocateDataBuffer` returned `undefined`; the caller cancels that channel's request.
   * No BufferResponse is emitted for a skipped frame.
   */
  onSkipped?(receiverId: InputChannelID, size: number): void;
}
