import { IllegalStateError } from "../errors.js";
import type { DataType } from "./data-type.js";
import type { NetworkBuffer } from "./network-buffer.js";

/** What a BufferBuilder publishes to its consumers: the committed position and the seal. */
export interface PositionMarker {
  position: number;
  finished: boolean;
}

/**
 * The reader side of a BufferBuilder (Flink's BufferConsumer). `build()` returns the committed
 * bytes not read yet as a retained read-only slice; the subpartition queue holds consumers, not
 * buffers, so data written after the consumer was queued is still seen.
 */
export class BufferConsumer {
  private readonly buffer: NetworkBuffer;
  private readonly marker: PositionMarker;
  private readerPosition: number;
  private closed = false;
  /**
   * Bytes at the start of this consumer's data that continue a record begun in the previous
   * buffer (Flink's partialRecordLength); set by the partition when it queues the consumer.
   */
  partialRecordLength = 0;

  /** @internal Created by BufferBuilder or `copy()`; owns one reference of `buffer`. */
  constructor(buffer: NetworkBuffer, marker: PositionMarker, readerPosition: number) {
    this.buffer = buffer;
    this.marker = marker;
    this.readerPosition = readerPosition;
  }

  /**
   * Wraps a complete buffer (an event, or data that is already final) in a finished consumer that
   * takes over the caller's reference.
   */
  static fromFinishedBuffer(buffer: NetworkBuffer): BufferConsumer {
    return new BufferConsumer(buffer, { position: buffer.getSize(), finished: true }, 0);
  }

  /**
   * True when the builder finished and every committed byte was read: nothing more will come.
   */
  isFinished(): boolean {
    return this.marker.finished && this.readerPosition >= this.marker.position;
  }

  /** True when the builder was sealed (there may still be unread bytes). */
  isBuilderFinished(): boolean {
    return this.marker.finished;
  }

  /**
   * Returns the committed, unread bytes as a read-only slice carrying its own reference (the
   * caller recycles it) and advances the reader. May return an empty buffer.
   */
  build(): NetworkBuffer {
    this.checkOpen();
    const writer = this.marker.position;
    const slice = this.buffer.readOnlySlice(this.readerPosition, writer - this.readerPosition);
    slice.retainBuffer();
    this.readerPosition = writer;
    return slice;
  }

  /**
   * Another consumer of the same segment starting at this consumer's position (broadcast: one
   * segment, several readers). It holds its own reference.
   */
  copy(): BufferConsumer {
    this.checkOpen();
    const copy = new BufferConsumer(this.buffer.retainBuffer(), this.marker, this.readerPosition);
    copy.partialRecordLength = this.partialRecordLength;
    return copy;
  }

  /** True for data consumers; false for event consumers. */
  isBuffer(): boolean {
    return this.buffer.isBuffer();
  }

  getDataType(): DataType {
    return this.buffer.getDataType();
  }

  /** True when committed bytes wait to be read. */
  isDataAvailable(): boolean {
    return this.marker.position > this.readerPosition;
  }

  /** Committed bytes so far (the builder's commit position). */
  getWrittenBytes(): number {
    return this.marker.position;
  }

  /** Committed bytes not read yet. */
  getUnreadBytes(): number {
    return this.marker.position - this.readerPosition;
  }

  /** Releases this consumer's reference. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.recycleBuffer();
  }

  isRecycled(): boolean {
    return this.closed;
  }

  private checkOpen(): void {
    if (this.closed) throw new IllegalStateError("BufferConsumer is closed");
  }
}
