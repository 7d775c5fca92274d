import type { MemorySegment } from "@sluice/core";

/** One buffer of a run, handed out by a {@link DataBuffer} while it is spilled. */
export interface DataBufferOutput {
  /** The segment holding the bytes, from offset 0. */
  readonly segment: MemorySegment;
  /** Bytes of the buffer. */
  readonly size: number;
}

/**
 * The in-memory stage of a sort-merge partition (Flink's DataBuffer): framed records (their
 * 4-byte length, then the payload, as the writer framed them) are copied in and, once the buffer
 * is full, read back as one run of buffers per
 * subpartition, in the buffer's subpartition order, each run in arrival order. A record may span
 * buffers of its run.
 *
 * Calls: `append`… until it returns false, then `finish()`, then per run `currentSubpartition()`
 * and `nextBuffer()` until it returns `undefined` (which moves on to the next run), until
 * `currentSubpartition()` returns -1.
 */
export interface DataBuffer {
  readonly numberOfSubpartitions: number;
  /**
   * True when `nextBuffer` copies into the write buffer it is given; false when it hands out the
   * buffer's own segments (then no write buffer is needed, and the segments must stay untouched
   * until they were written).
   */
  readonly copiesIntoWriteBuffers: boolean;
  /**
   * Appends the framed `record` for `subpartition`, copying its bytes. Returns false, writing
   * nothing, when it does not fit what is left.
   */
  append(record: Uint8Array, subpartition: number): boolean;
  /** True when no record was appended since the last reset. */
  isEmpty(): boolean;
  /** Records appended since the last reset. */
  getNumberOfRecords(): number;
  /** True when a framed record of `length` bytes fits this buffer when it is empty. */
  canEverHold(length: number): boolean;
  /** Ends appending and prepares reading the runs. */
  finish(): void;
  /** The subpartition whose run is read next, or -1 when every run was read. */
  currentSubpartition(): number;
  /**
   * The next buffer of the current run, or `undefined` when the run is done (the next call reads
   * the next run). `writeBuffer` receives the bytes when `copiesIntoWriteBuffers`.
   */
  nextBuffer(writeBuffer: MemorySegment | undefined): DataBufferOutput | undefined;
}
