import { IllegalArgumentError, IllegalStateError } from "../errors.js";
import { BufferConsumer, type PositionMarker } from "./buffer-consumer.js";
import type { BufferRecycler } from "./buffer-recycler.js";
import { DataType } from "./data-type.js";
import type { MemorySegment } from "./memory-segment.js";
import { NetworkBuffer } from "./network-buffer.js";
import { copyBytes, MIN_REALIGNED_COPY_BYTES } from "./shared-memory-copy.js";

/** Copies up to this many bytes with a loop rather than a subarray view. */
const SHORT_COPY = 16;

/**
 * The single writer of one segment (Flink's BufferBuilder). Bytes are appended, then `commit()`
 * makes them visible to the BufferConsumer(s) reading the same segment; `finish()` seals the
 * buffer. A subpartition queues the consumer as soon as the builder is requested, so a reader can
 * ship committed bytes of a half-full buffer on flush.
 *
 * The builder owns one reference to the segment's buffer, each consumer another; the segment
 * returns to its pool when the builder is closed and every consumer is closed.
 */
export class BufferBuilder {
  private readonly buffer: NetworkBuffer;
  private readonly marker: PositionMarker = { position: 0, finished: false };
  private readonly segment: MemorySegment;
  /** `segment.memory`, held directly: the per-record paths write it without the extra hop. */
  private readonly memory: Buffer;
  private maxCapacity: number;
  /** Uncommitted write position. */
  private writerPosition = 0;
  private consumerCreated = false;
  private closed = false;
  /**
   * Neither finished nor closed: what the per-record path checks. A field of the builder itself,
   * so a record's append reads only the builder (and the segment): with a thousand subpartitions
   * the builders of the others push this one's marker out of the CPU's cache between two of its
   * records, and the marker is then only written, which costs no wait.
   */
  private writable = true;

  constructor(segment: MemorySegment, recycler: BufferRecycler, dataType = DataType.DATA_BUFFER) {
    this.segment = segment;
    this.memory = segment.memory;
    // The shared buffer spans the whole segment; what a consumer may read is bounded by the
    // committed position in the marker, so a commit never has to touch the buffer itself.
    this.buffer = new NetworkBuffer(segment, recycler, dataType, segment.size);
    this.maxCapacity = segment.size;
  }

  /**
   * Creates the consumer that reads from the current write position on. Only one consumer may be
   * created this way; use `BufferConsumer.copy()` for more readers (broadcast).
   */
  createBufferConsumer(): BufferConsumer {
    return this.createConsumerAt(this.writerPosition);
  }

  /** Creates the consumer that reads from the start of the segment. */
  createBufferConsumerFromBeginning(): BufferConsumer {
    return this.createConsumerAt(0);
  }

  private createConsumerAt(readerPosition: number): BufferConsumer {
    if (this.consumerCreated) {
      throw new IllegalStateError("a BufferBuilder has one consumer; use BufferConsumer.copy()");
    }
    this.consumerCreated = true;
    return new BufferConsumer(this.buffer.retainBuffer(), this.marker, readerPosition);
  }

  /**
   * Copies as many bytes of `source[offset, offset + length)` as fit and commits them. Returns the
   * number of bytes copied.
   */
  appendAndCommit(source: Uint8Array, offset = 0, length = source.length - offset): number {
    const written = this.append(source, offset, length);
    this.commit();
    return written;
  }

  /** Copies as many bytes as fit without making them visible yet. Returns the bytes copied. */
  append(source: Uint8Array, offset = 0, length = source.length - offset): number {
    this.checkOpen();
    if (this.marker.finished) throw new IllegalStateError("BufferBuilder is already finished");
    if (offset < 0 || length < 0 || offset + length > source.length) {
      throw new IllegalArgumentError(
        `append range [${offset}, ${offset + length}) out of source [0, ${source.length})`,
      );
    }
    const toCopy = Math.min(length, this.maxCapacity - this.writerPosition);
    if (toCopy <= 0) return 0;
    const memory = this.memory;
    const position = this.writerPosition;
    // Hot path: most records fit whole. Avoid the view a subarray() would allocate per record
    // (it showed up as ~30% of an in-process profile): copy the whole source, or short runs
    // byte by byte.
    if (toCopy < MIN_REALIGNED_COPY_BYTES && offset === 0 && toCopy === source.length) {
      memory.set(source, position);
    } else if (toCopy <= SHORT_COPY) {
      for (let i = 0; i < toCopy; i++) memory[position + i] = source[offset + i] as number;
    } else {
      // Into shared network memory at the source's alignment (see shared-memory-copy.ts).
      copyBytes(source, memory, position, offset, offset + toCopy);
    }
    this.writerPosition = position + toCopy;
    return toCopy;
  }

  /**
   * Appends all of `bytes` and commits them when they fit; returns false, writing nothing, when
   * they do not (the caller then spans them over buffers). One state check and one commit per
   * call: this is the path of almost every small framed record, so it avoids the per-call checks
   * of `append` followed by `commit`.
   */
  appendFullyAndCommit(bytes: Uint8Array): boolean {
    if (!this.writable) this.throwNotWritable();
    const length = bytes.length;
    const position = this.writerPosition;
    if (this.maxCapacity - position < length) return false;
    const memory = this.memory;
    // TypedArray.set costs more than a short byte loop (16 B framed records: an int64 and its length).
    if (length <= SHORT_COPY) {
      for (let i = 0; i < length; i++) memory[position + i] = bytes[i] as number;
    } else if (length < MIN_REALIGNED_COPY_BYTES) {
      // What copyBytes would do too, without its reads of both offsets on every record.
      memory.set(bytes, position);
    } else {
      copyBytes(bytes, memory, position, 0, length);
    }
    this.writerPosition = this.marker.position = position + length;
    return true;
  }

  /** Makes every appended byte visible to the consumers. */
  commit(): void {
    this.marker.position = this.writerPosition;
  }

  /**
   * Commits and seals the buffer: consumers see it as finished once they read everything. Returns
   * the number of bytes written. Idempotent.
   */
  finish(): number {
    this.commit();
    this.marker.finished = true;
    this.writable = false;
    return this.writerPosition;
  }

  isFinished(): boolean {
    return this.marker.finished;
  }

  /** True when no more byte fits. */
  isFull(): boolean {
    return this.writerPosition >= this.maxCapacity;
  }

  /**
   * The address modulo 8 of the next byte this builder writes: a source at the same alignment is
   * copied into shared memory a word at a time (see shared-memory-copy.ts).
   */
  getWriteAlignment(): number {
    return (this.memory.byteOffset + this.writerPosition) & 7;
  }

  getWritableBytes(): number {
    return this.maxCapacity - this.writerPosition;
  }

  getCommittedBytes(): number {
    return this.marker.position;
  }

  getMaxCapacity(): number {
    return this.maxCapacity;
  }

  getDataType(): DataType {
    return this.buffer.getDataType();
  }

  /**
   * Caps how many bytes this builder accepts (buffer debloating). Never below what is already
   * written.
   */
  trim(newSize: number): void {
    this.maxCapacity = Math.min(Math.max(newSize, this.writerPosition), this.segment.size);
  }

  /** Releases the builder's reference. Consumers keep reading what was committed. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.writable = false;
    this.buffer.recycleBuffer();
  }

  private throwNotWritable(): never {
    this.checkOpen();
    throw new IllegalStateError("BufferBuilder is already finished");
  }

  private checkOpen(): void {
    if (this.closed) throw new IllegalStateError("BufferBuilder is closed");
  }
}
