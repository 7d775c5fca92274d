import {
  type BufferRecycler,
  DataType,
  type MemorySegment,
  type NetworkBuffer,
} from "@sluice/core";
import type { BufferAndBacklog } from "./buffer-and-backlog.js";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { PartitionedFileReader } from "./partitioned-file-reader.js";
import type {
  AvailabilityWithBacklog,
  ResultSubpartitionView,
} from "./result-subpartition-view.js";
import { nextSequenceNumber } from "./sequence-number.js";

/** Buffers a reader reads ahead of its consumer; bounds what one slow consumer holds. */
export const MAX_BUFFERS_READ_AHEAD = 32;
/**
 * A reader asks for more only once its queue fell to this many buffers, so that reads refill
 * half the read-ahead with one `readv` instead of replacing each sent buffer with a read of one.
 */
const READ_AHEAD_LOW_WATERMARK = MAX_BUFFERS_READ_AHEAD / 2;

/** What a reader asks of its partition's read scheduler. */
export interface ReadRequester {
  /** The reader has room for more buffers: schedule a read. */
  requestRead(reader: SortMergeSubpartitionReader): void;
  /** The reader was released: stop scheduling it. */
  removeReader(reader: SortMergeSubpartitionReader): void;
}

/**
 * One consumer's view of one subpartition of a sort-merge partition (Flink's
 * SortMergeSubpartitionReader). Any number of views may read the same subpartition, each from the
 * start of the file at its own pace. Data arrives asynchronously: the read scheduler fills the
 * view's queue from disk, and the view tells its listener (the server's credit-based reader or a
 * local channel) when the queue turns non-empty — the same availability signal a pipelined
 * subpartition gives, so the credit-based server needs no second send path.
 */
export class SortMergeSubpartitionReader implements ResultSubpartitionView {
  readonly subpartitionIndex: number;
  private readonly listener: BufferAvailabilityListener;
  private readonly scheduler: ReadRequester;
  private readonly fileReader: PartitionedFileReader;
  private readonly queue: NetworkBuffer[] = [];
  private dataBuffersInQueue = 0;
  /** The next buffer's sequence number (an int32 that wraps, as Flink's int). */
  private sequenceNumber: number;
  private failure: Error | undefined;
  private released = false;

  constructor(
    fileReader: PartitionedFileReader,
    listener: BufferAvailabilityListener,
    scheduler: ReadRequester,
    initialSequenceNumber = 0,
  ) {
    this.sequenceNumber = initialSequenceNumber | 0;
    this.subpartitionIndex = fileReader.subpartition;
    this.fileReader = fileReader;
    this.listener = listener;
    this.scheduler = scheduler;
  }

  /** Whether the scheduler should read for this view now, and how many buffers at most. */
  getBufferDemand(): number {
    if (this.released || this.failure !== undefined || !this.fileReader.hasRemaining()) return 0;
    const queued = this.queue.length;
    return queued > READ_AHEAD_LOW_WATERMARK ? 0 : MAX_BUFFERS_READ_AHEAD - queued;
  }

  /** The file offset this view reads next (the scheduler reads in offset order). */
  getNextReadOffset(): number {
    return this.fileReader.getNextOffset();
  }

  /**
   * Called by the scheduler: reads into segments taken from the front of `segments` (unused ones
   * stay there) and queues the buffers. Throws what the file reader throws.
   */
  async readBuffers(segments: MemorySegment[], recycler: BufferRecycler): Promise<void> {
    const buffers = await this.fileReader.readBuffers(segments, recycler);
    if (this.released || this.failure !== undefined) {
      for (const buffer of buffers) buffer.recycleBuffer();
      return;
    }
    const wasEmpty = this.queue.length === 0;
    for (const buffer of buffers) {
      this.queue.push(buffer);
      if (buffer.isBuffer()) this.dataBuffersInQueue++;
    }
    if (wasEmpty && buffers.length > 0) this.notifyDataAvailable();
  }

  /** The read failed (corrupt file, I/O error, partition released): report `cause`. */
  fail(cause: Error): void {
    if (this.released || this.failure !== undefined) return;
    this.failure = cause;
    this.recycleQueue();
    this.notifyDataAvailable();
  }

  getNextBuffer(): BufferAndBacklog | undefined {
    if (this.released || this.failure !== undefined) return undefined;
    const buffer = this.queue.shift();
    if (buffer?.isBuffer()) this.dataBuffersInQueue--;
    if (this.getBufferDemand() > 0) this.scheduler.requestRead(this);
    if (buffer === undefined) return undefined;
    const next = this.queue[0];
    const sequenceNumber = this.sequenceNumber;
    this.sequenceNumber = nextSequenceNumber(sequenceNumber);
    return {
      buffer,
      buffersInBacklog: this.dataBuffersInQueue,
      nextDataType: next === undefined ? DataType.NONE : next.getDataType(),
      sequenceNumber,
    };
  }

  getAvailabilityAndBacklog(numCreditsAvailable: number): AvailabilityWithBacklog {
    const head = this.queue[0];
    const isAvailable =
      head !== undefined && !this.released && (numCreditsAvailable > 0 || !head.isBuffer());
    return { isAvailable, backlog: this.dataBuffersInQueue };
  }

  notifyDataAvailable(): void {
    this.listener.notifyDataAvailable(this);
  }

  resumeConsumption(): void {
    // Batch data carries no aligned barriers: nothing ever blocks a sort-merge subpartition.
  }

  acknowledgeAllDataProcessed(): void {
    // Blocking partitions are released by the scheduler, never on acknowledgement.
  }

  /** The consumer is done (or gone): its buffers go back; the partition stays for other reads. */
  releaseAllResources(): void {
    if (this.released) return;
    this.released = true;
    this.recycleQueue();
    this.scheduler.removeReader(this);
  }

  /** Released by the consumer, or failed (then `getFailureCause()` says why). */
  isReleased(): boolean {
    return this.released || this.failure !== undefined;
  }

  getFailureCause(): Error | undefined {
    return this.failure;
  }

  getNumberOfQueuedBuffers(): number {
    return this.queue.length;
  }

  notifyNewBufferSize(): void {
    // Buffers are read from the file as they were written; debloating does not apply.
  }

  private recycleQueue(): void {
    for (const buffer of this.queue.splice(0)) buffer.recycleBuffer();
    this.dataBuffersInQueue = 0;
  }

  toString(): string {
    return `SortMergeSubpartitionReader#${this.subpartitionIndex}[queued=${this.queue.length}]`;
  }
}
