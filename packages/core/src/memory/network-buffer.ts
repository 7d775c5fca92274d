import { BufferRecycledError, IllegalArgumentError, IllegalStateError } from "../errors.js";
import type { BufferRecycler } from "./buffer-recycler.js";
import { DataType, isBufferType } from "./data-type.js";
import type { MemorySegment } from "./memory-segment.js";

/** The lease on one segment, shared by a buffer and all of its slices. */
class SegmentLease {
  refCount = 1;
  constructor(
    readonly segment: MemorySegment,
    readonly recycler: BufferRecycler,
  ) {}
}

/**
 * A reference-counted view on a MemorySegment with a reader index and a size (Flink's
 * Buffer/NetworkBuffer). `retainBuffer()` adds a reference, `recycleBuffer()` drops one; when the
 * count reaches zero the segment goes back to its recycler, exactly once. A further recycle throws
 * {@link BufferRecycledError} instead of freeing the segment twice.
 *
 * Read-only slices (`readOnlySlice`) share the lease (and so the reference count) but have their
 * own indices, like Flink's ReadOnlySlicedNetworkBuffer.
 */
export class NetworkBuffer {
  private lease: SegmentLease;
  /** Start of this buffer's window in the segment (0 unless a slice). */
  private offset: number;
  private capacity: number;
  private size: number;
  private reader = 0;
  private dataType: DataType;
  private compressed: boolean;
  /** Set on read-only slices; a slice may not change its size or type. */
  private readOnly: boolean;
  /**
   * Bytes at the start of this buffer that continue a record begun in the previous buffer of the
   * same subpartition (Flink's partialRecordLength). Informational.
   */
  partialRecordLength = 0;

  constructor(
    segment: MemorySegment,
    recycler: BufferRecycler,
    dataType: DataType = DataType.DATA_BUFFER,
    size = 0,
    isCompressed = false,
  ) {
    this.lease = new SegmentLease(segment, recycler);
    this.offset = 0;
    this.capacity = segment.size;
    if (size < 0 || size > segment.size) {
      throw new IllegalArgumentError(`buffer size ${size} out of [0, ${segment.size}]`);
    }
    this.size = size;
    this.dataType = dataType;
    this.compressed = isCompressed;
    this.readOnly = false;
  }

  /** Creates a read-only slice sharing `parent`'s lease. Internal: use `readOnlySlice`. */
  private static slice(parent: NetworkBuffer, index: number, length: number): NetworkBuffer {
    const slice = new NetworkBuffer(parent.lease.segment, parent.lease.recycler, parent.dataType);
    slice.lease = parent.lease;
    slice.offset = parent.offset + index;
    slice.capacity = length;
    slice.size = length;
    slice.compressed = parent.compressed;
    slice.readOnly = true;
    return slice;
  }

  /** The underlying segment (shared with slices). */
  getMemorySegment(): MemorySegment {
    return this.lease.segment;
  }

  /** Offset of this buffer's first byte inside the segment. */
  getMemorySegmentOffset(): number {
    return this.offset;
  }

  /** True for slices made by `readOnlySlice`. */
  isReadOnly(): boolean {
    return this.readOnly;
  }

  getRecycler(): BufferRecycler {
    return this.lease.recycler;
  }

  /** True for data buffers (record bytes); false for events. */
  isBuffer(): boolean {
    return isBufferType(this.dataType);
  }

  getDataType(): DataType {
    return this.dataType;
  }

  setDataType(dataType: DataType): void {
    this.checkWritable();
    this.dataType = dataType;
  }

  isCompressed(): boolean {
    return this.compressed;
  }

  setCompressed(isCompressed: boolean): void {
    this.compressed = isCompressed;
  }

  /** Number of bytes written (the writer index). */
  getSize(): number {
    return this.size;
  }

  setSize(size: number): void {
    this.checkWritable();
    if (!Number.isInteger(size) || size < this.reader || size > this.capacity) {
      throw new IllegalArgumentError(
        `buffer size ${size} out of [readerIndex ${this.reader}, capacity ${this.capacity}]`,
      );
    }
    this.size = size;
  }

  getMaxCapacity(): number {
    return this.capacity;
  }

  getReaderIndex(): number {
    return this.reader;
  }

  setReaderIndex(index: number): void {
    if (!Number.isInteger(index) || index < 0 || index > this.size) {
      throw new IllegalArgumentError(`reader index ${index} out of [0, ${this.size}]`);
    }
    this.reader = index;
  }

  /** Bytes between the reader index and the size. */
  readableBytes(): number {
    return this.size - this.reader;
  }

  /** A view (no copy) of the readable bytes `[readerIndex, size)`. */
  readableView(): Buffer {
    this.checkNotRecycled();
    const start = this.offset + this.reader;
    return this.lease.segment.memory.subarray(start, this.offset + this.size);
  }

  /** A view (no copy) of the whole written window `[0, size)`. */
  view(): Buffer {
    this.checkNotRecycled();
    return this.lease.segment.memory.subarray(this.offset, this.offset + this.size);
  }

  /** A writable view of `[size, capacity)`: where the next bytes go. */
  writableView(): Buffer {
    this.checkWritable();
    return this.lease.segment.memory.subarray(this.offset + this.size, this.offset + this.capacity);
  }

  /**
   * A read-only slice of `[index, index + length)` of the written bytes that shares this buffer's
   * reference count. The slice is *not* retained: call `retainBuffer()` on it to keep it beyond
   * the parent's lifetime.
   */
  readOnlySlice(index = this.reader, length = this.size - index): NetworkBuffer {
    this.checkNotRecycled();
    if (index < 0 || length < 0 || index + length > this.size) {
      throw new IllegalArgumentError(
        `slice [${index}, ${index + length}) out of [0, ${this.size})`,
      );
    }
    return NetworkBuffer.slice(this, index, length);
  }

  /** Adds a reference; returns this for chaining. */
  retainBuffer(): this {
    this.checkNotRecycled();
    this.lease.refCount++;
    return this;
  }

  /**
   * Drops a reference. The last one returns the segment to its recycler. Throws
   * {@link BufferRecycledError} when no reference is left (a double recycle).
   */
  recycleBuffer(): void {
    const lease = this.lease;
    if (lease.refCount <= 0) {
      throw new BufferRecycledError(
        `buffer (${DataType[this.dataType]}, ${this.size} bytes) recycled more often than retained`,
      );
    }
    lease.refCount--;
    if (lease.refCount === 0) lease.recycler.recycle(lease.segment);
  }

  /** True once every reference was released; the memory may belong to someone else now. */
  isRecycled(): boolean {
    return this.lease.refCount <= 0;
  }

  /** The current reference count (shared with slices). */
  refCnt(): number {
    return this.lease.refCount;
  }

  toString(): string {
    return `NetworkBuffer(${DataType[this.dataType]}, size=${this.size}, reader=${this.reader}, refCnt=${this.lease.refCount})`;
  }

  private checkNotRecycled(): void {
    if (this.lease.refCount <= 0) {
      throw new IllegalStateError("buffer already recycled");
    }
  }

  private checkWritable(): void {
    this.checkNotRecycled();
    if (this.readOnly) throw new IllegalStateError("read-only buffer slice cannot be modified");
  }
}
