import { IllegalArgumentError, IllegalStateError, type MemorySegment } from "@sluice/core";
import type { DataBuffer, DataBufferOutput } from "./data-buffer.js";

/**
 * The data buffer a sort-merge partition uses when it has segments to spare for every
 * subpartition (Flink's HashBasedDataBuffer): each subpartition fills segments of its own as its
 * records arrive, so a run is already contiguous in memory and spilling hands the segments to the
 * file writer as they are — no sort, no index, no copy-out. The cost is one partly filled segment
 * per subpartition and region, which is why the partition chooses this buffer only when it holds
 * several segments per subpartition (see docs/architecture.md).
 */
export class HashBasedDataBuffer implements DataBuffer {
  readonly numberOfSubpartitions: number;
  readonly copiesIntoWriteBuffers = false;
  private readonly segmentSize: number;
  private readonly numberOfSegments: number;
  private readonly subpartitionOrder: readonly number[];
  /** Segments not holding data yet. */
  private readonly free: MemorySegment[];
  /** Per subpartition, its segments in order; the last one may be partly filled. */
  private readonly runs: MemorySegment[][];
  /** Per subpartition, bytes used in its last segment. */
  private readonly lastFill: Int32Array;
  /** Per subpartition, the memory of its last segment (undefined before its first record). */
  private readonly current: (Buffer | undefined)[];
  private numberOfRecords = 0;
  private finished = false;
  // Read side, after finish().
  private runIndex = 0;
  private segmentCursor = 0;

  /**
   * @param segments the memory to fill; every segment has the same size. The buffer hands them
   *   out while spilled; they stay the caller's.
   * @param subpartitionOrder the order in which runs are read (a permutation of the
   *   subpartitions).
   */
  constructor(
    segments: readonly MemorySegment[],
    numberOfSubpartitions: number,
    subpartitionOrder: readonly number[],
  ) {
    if (segments.length === 0) throw new IllegalArgumentError("a data buffer needs segments");
    if (subpartitionOrder.length !== numberOfSubpartitions) {
      throw new IllegalArgumentError(
        `subpartition order of ${subpartitionOrder.length} entries for ${numberOfSubpartitions} subpartitions`,
      );
    }
    this.segmentSize = (segments[0] as MemorySegment).size;
    this.numberOfSegments = segments.length;
    this.free = [...segments];
    this.numberOfSubpartitions = numberOfSubpartitions;
    this.subpartitionOrder = subpartitionOrder;
    this.runs = Array.from({ length: numberOfSubpartitions }, () => []);
    this.lastFill = new Int32Array(numberOfSubpartitions);
    this.current = new Array<Buffer | undefined>(numberOfSubpartitions).fill(undefined);
  }

  append(record: Uint8Array, subpartition: number): boolean {
    if (this.finished) throw new IllegalStateError("data buffer is finished");
    if (subpartition < 0 || subpartition >= this.numberOfSubpartitions) {
      throw new IllegalArgumentError(
        `subpartition ${subpartition} out of [0, ${this.numberOfSubpartitions})`,
      );
    }
    const size = this.segmentSize;
    const bytes = record.length;
    let fill = this.lastFill[subpartition] as number;
    const memory = this.current[subpartition];
    if (memory !== undefined && bytes <= size - fill) {
      // The common case: the record fits the run's current segment.
      memory.set(record, fill);
      this.lastFill[subpartition] = fill + bytes;
      this.numberOfRecords++;
      return true;
    }
    const run = this.runs[subpartition] as MemorySegment[];
    const room = run.length === 0 ? 0 : size - fill;
    if (Math.ceil((bytes - room) / size) > this.free.length) return false;
    let segment = run.length === 0 ? undefined : (run[run.length - 1] as MemorySegment);
    for (let copied = 0; copied < bytes; ) {
      if (segment === undefined || fill === size) {
        segment = this.free.pop() as MemorySegment;
        run.push(segment);
        this.current[subpartition] = segment.memory;
        fill = 0;
      }
      const n = Math.min(bytes - copied, size - fill);
      segment.memory.set(
        copied === 0 && n === bytes ? record : record.subarray(copied, copied + n),
        fill,
      );
      copied += n;
      fill += n;
    }
    this.lastFill[subpartition] = fill;
    this.numberOfRecords++;
    return true;
  }

  isEmpty(): boolean {
    return this.numberOfRecords === 0;
  }

  getNumberOfRecords(): number {
    return this.numberOfRecords;
  }

  canEverHold(length: number): boolean {
    return Math.ceil(length / this.segmentSize) <= this.numberOfSegments;
  }

  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.runIndex = 0;
    this.segmentCursor = 0;
    this.skipEmptyRuns();
  }

  currentSubpartition(): number {
    this.checkFinished();
    if (this.runIndex >= this.numberOfSubpartitions) return -1;
    return this.subpartitionOrder[this.runIndex] as number;
  }

  /** Hands out the current run's next segment itself; `writeBuffer` is not used. */
  nextBuffer(_writeBuffer: MemorySegment | undefined): DataBufferOutput | undefined {
    this.checkFinished();
    if (this.runIndex >= this.numberOfSubpartitions) return undefined;
    const subpartition = this.subpartitionOrder[this.runIndex] as number;
    const run = this.runs[subpartition] as MemorySegment[];
    const index = this.segmentCursor;
    if (index >= run.length) {
      this.runIndex++;
      this.segmentCursor = 0;
      this.skipEmptyRuns();
      return undefined;
    }
    this.segmentCursor = index + 1;
    const size =
      index === run.length - 1 ? (this.lastFill[subpartition] as number) : this.segmentSize;
    return { segment: run[index] as MemorySegment, size };
  }

  private skipEmptyRuns(): void {
    while (
      this.runIndex < this.numberOfSubpartitions &&
      (this.runs[this.subpartitionOrder[this.runIndex] as number] as MemorySegment[]).length === 0
    ) {
      this.runIndex++;
    }
  }

  private checkFinished(): void {
    if (!this.finished) throw new IllegalStateError("data buffer is not finished");
  }
}
