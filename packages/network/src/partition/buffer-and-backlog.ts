import { DataType, isEventType, type NetworkBuffer } from "@sluice/core";

/**
 * One buffer taken from a subpartition, with what the reader needs to tell its consumer
 * (Flink's ResultSubpartition.BufferAndBacklog): the backlog after taking it, the type of the
 * next buffer (NONE when nothing is available yet) and the per-view sequence number.
 */
export interface BufferAndBacklog {
  /** The buffer; the caller owns one reference and must recycle it. */
  readonly buffer: NetworkBuffer;
  /** Finished data buffers still queued (events excluded), as sent on the wire. */
  readonly buffersInBacklog: number;
  /** The type of the next available buffer, or NONE when no further buffer is available now. */
  readonly nextDataType: DataType;
  /** Starts at 0 per view and increments for every buffer or event taken. */
  readonly sequenceNumber: number;
}

/** True when another buffer (data or event) can be taken right away. */
export function isDataAvailable(value: BufferAndBacklog): boolean {
  return value.nextDataType !== DataType.NONE;
}

/** True when the next available buffer is an event (which needs no credit). */
export function isEventAvailable(value: BufferAndBacklog): boolean {
  return isEventType(value.nextDataType);
}
