import { IllegalArgumentError, IllegalStateError, type MemorySegment } from "@sluice/core";
import type { DataBuffer, DataBufferOutput } from "./data-buffer.js";

/**
 * Bytes of the sort buffer charged per record for its index entry (file offset and target, kept
 * in typed arrays). Flink keeps a 16-byte entry inside the segments; charging it here keeps the
 * memory the buffer holds within the segments it was given.
 */
export const INDEX_ENTRY_BYTES = 8;

/** Largest sort buffer: record offsets are int32. */
const MAX_CAPACITY = 0x7fff_ffff;

/**
 * The sort buffer of a sort-merge partition (Flink's SortBasedDataBuffer). Records are appended
 * in arrival order into the partition's network segments, framed as they came (their 4-byte
 * length, then the payload); a small
 * index remembers where each starts and which subpartition it is for. When the buffer is full
 * (or the partition finishes), `finish()` groups the records by subpartition — a stable counting
 * sort of the index, the records themselves are not moved — and `copyInto` copies them out run by
 * run, subpartition after subpartition, packed into buffers for the partitioned file. A record
 * may span segments in the sort buffer and buffers in the output, as in any buffer of records.
 */
export class SortBasedDataBuffer implements DataBuffer {
  readonly numberOfSubpartitions: number;
  readonly copiesIntoWriteBuffers = true;
  private readonly segments: readonly MemorySegment[];
  private readonly segmentSize: number;
  private readonly capacity: number;
  private readonly subpartitionOrder: readonly number[];
  /** Where each framed record starts in the sort buffer. */
  private offsets = new Int32Array(1024);
  private targets = new Int32Array(1024);
  private numberOfRecords = 0;
  /** Bytes written (framed records). */
  private writePosition = 0;
  private readonly bytesPerSubpartition: number[];
  private finished = false;
  // Read side, after finish(): record indexes grouped by subpartition.
  private order = new Int32Array(0);
  private readonly runStart: number[];
  private runIndex = 0;
  private recordCursor = 0;
  /** Bytes of the current record already copied out. */
  private byteCursor = 0;

  /**
   * @param segments the memory to sort in; every segment has the same size.
   * @param subpartitionOrder the order in which runs are copied out (a permutation of the
   *   subpartitions).
   */
  constructor(
    segments: readonly MemorySegment[],
    numberOfSubpartitions: number,
    subpartitionOrder: readonly number[],
  ) {
    if (segments.length === 0) throw new IllegalArgumentError("a sort buffer needs segments");
    if (subpartitionOrder.length !== numberOfSubpartitions) {
      throw new IllegalArgumentError(
        `subpartition order of ${subpartitionOrder.length} entries for ${numberOfSubpartitions} subpartitions`,
      );
    }
    this.segments = segments;
    this.segmentSize = (segments[0] as MemorySegment).size;
    this.capacity = Math.min(segments.length * this.segmentSize, MAX_CAPACITY);
    this.numberOfSubpartitions = numberOfSubpartitions;
    this.subpartitionOrder = subpartitionOrder;
    this.bytesPerSubpartition = new Array<number>(numberOfSubpartitions).fill(0);
    this.runStart = new Array<number>(numberOfSubpartitions + 1).fill(0);
  }

  /** Bytes a framed record of `length` bytes takes in a sort buffer: the record, its index entry. */
  static footprint(length: number): number {
    return length + INDEX_ENTRY_BYTES;
  }

  /**
   * Appends the framed `record` for `subpartition`, copying its bytes. Returns false, writing
   * nothing, when it does not fit what is left.
   */
  append(record: Uint8Array, subpartition: number): boolean {
    if (this.finished) throw new IllegalStateError("sort buffer is finished; reset() it first");
    if (subpartition < 0 || subpartition >= this.numberOfSubpartitions) {
      throw new IllegalArgumentError(
        `subpartition ${subpartition} out of [0, ${this.numberOfSubpartitions})`,
      );
    }
    const used = this.writePosition + this.numberOfRecords * INDEX_ENTRY_BYTES;
    if (used + SortBasedDataBuffer.footprint(record.length) > this.capacity) return false;
    const index = this.numberOfRecords;
    if (index === this.offsets.length) this.growIndex();
    this.offsets[index] = this.writePosition;
    this.targets[index] = subpartition;
    this.numberOfRecords = index + 1;
    this.writeBytes(record);
    this.bytesPerSubpartition[subpartition] =
      (this.bytesPerSubpartition[subpartition] as number) + record.length;
    return true;
  }

  /** True when no record was appended since the last reset. */
  isEmpty(): boolean {
    return this.numberOfRecords === 0;
  }

  /** Records appended since the last reset. */
  getNumberOfRecords(): number {
    return this.numberOfRecords;
  }

  /** Bytes of the framed records of `subpartition` since the last reset. */
  getBytes(subpartition: number): number {
    return this.bytesPerSubpartition[subpartition] ?? 0;
  }

  /** True when a framed record of `length` bytes fits this buffer when it is empty. */
  canEverHold(length: number): boolean {
    return SortBasedDataBuffer.footprint(length) <= this.capacity;
  }

  /** Groups the records by subpartition for reading; no append is accepted until `reset()`. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    const n = this.numberOfSubpartitions;
    const counts = new Array<number>(n).fill(0);
    for (let i = 0; i < this.numberOfRecords; i++) {
      const target = this.targets[i] as number;
      counts[target] = (counts[target] as number) + 1;
    }
    let position = 0;
    for (let i = 0; i < n; i++) {
      const subpartition = this.subpartitionOrder[i] as number;
      this.runStart[i] = position;
      position += counts[subpartition] as number;
    }
    this.runStart[n] = position;
    const next = new Array<number>(n);
    for (let i = 0; i < n; i++)
      next[this.subpartitionOrder[i] as number] = this.runStart[i] as number;
    if (this.order.length < this.numberOfRecords) this.order = new Int32Array(this.numberOfRecords);
    for (let i = 0; i < this.numberOfRecords; i++) {
      const target = this.targets[i] as number;
      const slot = next[target] as number;
      this.order[slot] = i;
      next[target] = slot + 1;
    }
    this.runIndex = 0;
    this.recordCursor = 0;
    this.byteCursor = 0;
    this.skipEmptyRuns();
  }

  /**
   * The subpartition whose records `copyInto` copies next, or -1 when every record was copied
   * out. Runs come in the buffer's subpartition order; subpartitions without records are skipped.
   */
  currentSubpartition(): number {
    this.checkFinished();
    if (this.runIndex >= this.numberOfSubpartitions) return -1;
    return this.subpartitionOrder[this.runIndex] as number;
  }

  /**
   * Copies the next bytes of the current subpartition's records into `target` from offset 0, as
   * many as fit, and returns how many. Returns 0 when the current run is done; the next call
   * continues with the next run. Adjacent records are copied in one go.
   */
  copyInto(target: MemorySegment): number {
    this.checkFinished();
    if (this.runIndex >= this.numberOfSubpartitions) return 0;
    const end = this.runStart[this.runIndex + 1] as number;
    if (this.recordCursor >= end) {
      this.runIndex++;
      this.recordCursor = end;
      this.byteCursor = 0;
      this.skipEmptyRuns();
      return 0;
    }
    const capacity = target.size;
    let written = 0;
    while (written < capacity && this.recordCursor < end) {
      // Extend over records that follow each other in the sort buffer.
      const first = this.order[this.recordCursor] as number;
      const start = (this.offsets[first] as number) + this.byteCursor;
      let last = this.recordCursor;
      let stop = this.recordEnd(first);
      while (last + 1 < end) {
        const candidate = this.order[last + 1] as number;
        if ((this.offsets[candidate] as number) !== stop) break;
        last++;
        stop = this.recordEnd(candidate);
      }
      const toCopy = Math.min(stop - start, capacity - written);
      this.readBytes(start, target.memory, written, toCopy);
      written += toCopy;
      // Advance the cursor over whole records copied, then into the partial one.
      let position = start + toCopy;
      while (this.recordCursor <= last) {
        const record = this.order[this.recordCursor] as number;
        const recordEnd = this.recordEnd(record);
        if (position >= recordEnd) {
          this.recordCursor++;
          this.byteCursor = 0;
        } else {
          this.byteCursor = position - (this.offsets[record] as number);
          position = recordEnd; // stop: the target is full
          break;
        }
      }
    }
    return written;
  }

  /** Copies the next bytes of the current run into `writeBuffer` (see `copyInto`). */
  nextBuffer(writeBuffer: MemorySegment | undefined): DataBufferOutput | undefined {
    if (writeBuffer === undefined) {
      throw new IllegalArgumentError("a sort buffer copies its runs out into a write buffer");
    }
    const size = this.copyInto(writeBuffer);
    return size === 0 ? undefined : { segment: writeBuffer, size };
  }

  /** Forgets every record; the segments can take new ones. */
  reset(): void {
    this.numberOfRecords = 0;
    this.writePosition = 0;
    this.bytesPerSubpartition.fill(0);
    this.finished = false;
    this.runIndex = 0;
    this.recordCursor = 0;
    this.byteCursor = 0;
  }

  /** Records are appended back to back: each ends where the next one starts. */
  private recordEnd(record: number): number {
    return record + 1 < this.numberOfRecords
      ? (this.offsets[record + 1] as number)
      : this.writePosition;
  }

  private skipEmptyRuns(): void {
    while (
      this.runIndex < this.numberOfSubpartitions &&
      this.runStart[this.runIndex] === this.runStart[this.runIndex + 1]
    ) {
      this.runIndex++;
    }
    if (this.runIndex < this.numberOfSubpartitions) {
      this.recordCursor = this.runStart[this.runIndex] as number;
    }
  }

  private checkFinished(): void {
    if (!this.finished) throw new IllegalStateError("sort buffer is not finished");
  }

  private growIndex(): void {
    const offsets = new Int32Array(this.offsets.length * 2);
    offsets.set(this.offsets);
    this.offsets = offsets;
    const targets = new Int32Array(this.targets.length * 2);
    targets.set(this.targets);
    this.targets = targets;
  }

  private writeBytes(source: Uint8Array): void {
    let copied = 0;
    while (copied < source.length) {
      const position = this.writePosition;
      const segment = this.segments[Math.floor(position / this.segmentSize)] as MemorySegment;
      const offset = position % this.segmentSize;
      const n = Math.min(source.length - copied, this.segmentSize - offset);
      segment.memory.set(
        copied === 0 && n === source.length ? source : source.subarray(copied, copied + n),
        offset,
      );
      copied += n;
      this.writePosition = position + n;
    }
  }

  private readBytes(position: number, target: Buffer, targetOffset: number, length: number): void {
    let copied = 0;
    while (copied < length) {
      const at = position + copied;
      const segment = this.segments[Math.floor(at / this.segmentSize)] as MemorySegment;
      const offset = at % this.segmentSize;
      const n = Math.min(length - copied, this.segmentSize - offset);
      segment.memory.copy(target, targetOffset + copied, offset, offset + n);
      copied += n;
    }
  }
}
