import {
  AvailabilityHelper,
  CancelledError,
  DataType,
  EndOfPartitionEvent,
  EventSerializer,
  FreeingBufferRecycler,
  IllegalStateError,
  type LocalBufferPool,
  type MemorySegment,
  NetworkBuffer,
  type RuntimeEvent,
} from "@sluice/core";
import type { BufferCompressor } from "../compression/buffer-compressor.js";
import type { BatchShuffleCounters } from "./batch-shuffle-counters.js";
import type { BatchShuffleReadBufferPool } from "./batch-shuffle-read-buffer-pool.js";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { DataBuffer } from "./data-buffer.js";
import type { FileChannelManager } from "./file-channel-manager.js";
import { HashBasedDataBuffer } from "./hash-based-data-buffer.js";
import type { PartitionedFile } from "./partitioned-file.js";
import { DATA_FILE_SUFFIX, INDEX_FILE_SUFFIX } from "./partitioned-file.js";
import { PartitionedFileWriter } from "./partitioned-file-writer.js";
import { ResultPartition, type ResultPartitionOptions } from "./result-partition.js";
import type { ResultSubpartitionView } from "./result-subpartition-view.js";
import { SortBasedDataBuffer } from "./sort-based-data-buffer.js";
import { SortMergeResultPartitionReadScheduler } from "./sort-merge-result-partition-read-scheduler.js";

/** Bytes of buffers used to copy a sorted region out to the file (Flink: 8 MiB). */
const WRITE_BUFFER_BYTES = 8 * 1024 * 1024;
/** At most this many write buffers per batch (Flink: 512, half of writev's 1024 iovecs). */
const MAX_WRITE_BUFFERS = 512;
/** A sort-merge partition cannot work with fewer segments: one to sort in, one to write from. */
const MIN_SEGMENTS = 2;
/**
 * Segments per subpartition from which a partition fills segments per subpartition (a
 * HashBasedDataBuffer) instead of sorting: each region then leaves at most one partly filled
 * segment per subpartition, an eighth of the memory at worst. With the pool's default size
 * (min-buffers 512) that holds up to 64 subpartitions; wider partitions sort.
 */
const HASH_BUFFER_SEGMENTS_PER_SUBPARTITION = 8;

/**
 * Construction parameters of a SortMergeResultPartition; its pool holds the network segments it
 * sorts in and writes from.
 */
export interface SortMergeResultPartitionOptions extends ResultPartitionOptions {
  /** Bytes of one network segment (the largest buffer in the file). */
  readonly segmentSize: number;
  /** Where the partition's files go. */
  readonly fileChannelManager: FileChannelManager;
  /** The worker's memory for reading the files back. */
  readonly readBufferPool: BatchShuffleReadBufferPool;
  /** Compresses data buffers before they are written, when compression is enabled. */
  readonly bufferCompressor?: BufferCompressor | undefined;
  /** The worker's batch-shuffle counters (its `BatchShuffle` metrics), counted into. */
  readonly counters?: BatchShuffleCounters | undefined;
  /**
   * The sequence number each reader's first buffer gets (default 0, as in Flink): tests start
   * near 2³¹ to cross the int32 wrap-around without reading 2³¹ buffers.
   */
  readonly initialSequenceNumber?: number;
}

/** A record waiting for the data buffer while a spill runs. */
interface PendingRecord {
  readonly bytes: Uint8Array;
  /** Subpartition, ignored for a broadcast record. */
  readonly target: number;
  readonly isBroadcast: boolean;
}

/** What a finished partition put on disk, for tools and the demo. */
export interface SortMergePartitionStatistics {
  readonly numberOfRegions: number;
  readonly dataFileBytes: number;
  /** Data bytes before compression (framed records: their lengths and payloads). */
  readonly bytesBeforeCompression: number;
  /** The same data as written (compressed buffers at their compressed size). */
  readonly bytesAfterCompression: number;
}

/**
 * A blocking result partition written to disk by sort-merge (Flink's SortMergeResultPartition,
 * the default for batch since Flink 1.15).
 *
 * Records go into a data buffer made of the partition's network segments: filled per
 * subpartition (`HashBasedDataBuffer`) when the partition holds enough segments, else a
 * `SortBasedDataBuffer`. When it is full, its records are written subpartition by
 * subpartition — one contiguous run each, the hash buffer's segments as they are, the sort
 * buffer's copied out into write buffers — compressed when that makes a buffer smaller, and
 * appended to one data file as a region,
 * with the region's index entries appended to one index file (see `PartitionedFile`).
 * The producer's network memory is therefore bounded by its pool, max(min-buffers, 4 × n)
 * segments, whatever the data size. `finish()` spills the rest, writes EndOfPartition and closes
 * the files; only then can consumers read, any number of times and concurrently, through views
 * fed by the partition's read scheduler from the worker's batch-shuffle read memory.
 *
 * File I/O is asynchronous. While a spill runs the partition is unavailable: a producer that
 * emits then has its one record kept (copied) and appended after the spill, and must await
 * `getAvailableFuture()` before the next one, the same contract as a pipelined partition's pool
 * running dry. `finish()` returns at once; `getAvailableFuture()` resolves when the files are
 * complete (check `getFailureCause()` then). I/O errors release the partition with that cause.
 */
export class SortMergeResultPartition extends ResultPartition {
  private readonly segmentSize: number;
  private readonly fileChannelManager: FileChannelManager;
  private readonly readBufferPool: BatchShuffleReadBufferPool;
  private readonly compressor: BufferCompressor | undefined;
  private readonly shuffleCounters: BatchShuffleCounters | undefined;
  private readonly initialSequenceNumber: number;
  /** Runs are written in this order, a random rotation per partition as in Flink, so that
   * consumers reading in file-offset order do not all start with the same producer's data. */
  private readonly subpartitionOrder: number[];
  private readonly segments: MemorySegment[] = [];
  private writeSegments: MemorySegment[] = [];
  private dataBuffer: DataBuffer | undefined;
  private isBroadcastMode = false;
  private fileWriter: PartitionedFileWriter | undefined;
  private resultFile: PartitionedFile | undefined;
  private readScheduler: SortMergeResultPartitionReadScheduler | undefined;
  /** The chain of asynchronous operations (spills, file writes); never rejects. */
  private work: Promise<void> = Promise.resolve();
  private queuedOperations = 0;
  /** The error of the file operation that failed and released the partition, if one did. */
  private writeFailure: Error | undefined;
  private pending: PendingRecord | undefined;
  private readonly availability = new AvailabilityHelper();
  private consumable = false;
  private closed = false;

  constructor(options: SortMergeResultPartitionOptions) {
    super("SortMergeResultPartition", options);
    this.segmentSize = options.segmentSize;
    this.fileChannelManager = options.fileChannelManager;
    this.readBufferPool = options.readBufferPool;
    this.compressor = options.bufferCompressor;
    this.shuffleCounters = options.counters;
    this.initialSequenceNumber = options.initialSequenceNumber ?? 0;
    const n = this.numberOfSubpartitions;
    const shift = Math.floor(Math.random() * n);
    this.subpartitionOrder = Array.from({ length: n }, (_, i) => (i + shift) % n);
  }

  // ------------------------------------------------------------------------------- lifecycle

  /**
   * Creates the files' writer, takes the guaranteed segments and registers the partition (not
   * yet consumable).
   */
  protected setupInternal(pool: LocalBufferPool): void {
    if (pool.getNumberOfRequiredMemorySegments() < MIN_SEGMENTS) {
      throw new IllegalStateError(
        `${this.description}: too few sort buffers (${pool.getNumberOfRequiredMemorySegments()}); raise 'taskmanager.network.sort-shuffle.min-buffers'`,
      );
    }
    // Created now, so that a broken read memory setting fails the producer, not its consumers.
    this.readBufferPool.initialize();
    const writer = new PartitionedFileWriter(
      this.fileChannelManager.createChannel(),
      this.numberOfSubpartitions,
      this.segmentSize,
      this.shuffleCounters,
    );
    this.fileWriter = writer;
    this.partitionManager.registerResultPartition(this);
    this.enqueue(() => writer.open());
    this.takeSegments();
    if (this.segments.length >= MIN_SEGMENTS) this.createDataBuffer();
    else this.enqueue(() => this.awaitSegments());
  }

  /**
   * Writes EndOfPartition after the data and completes the files asynchronously; the partition
   * becomes consumable when they are complete (`getAvailableFuture()` resolves then).
   */
  finish(): void {
    this.checkInProduceState();
    if (this.pending !== undefined) {
      throw new IllegalStateError(
        `${this.description}: finish() while a record is still waiting; await getAvailableFuture() first`,
      );
    }
    this.finished = true;
    const endOfPartition = EventSerializer.toBuffer(EndOfPartitionEvent.INSTANCE);
    this.enqueue(async () => {
      await this.spill();
      await this.writeEventRegion(endOfPartition);
      const file = await (this.fileWriter as PartitionedFileWriter).finish();
      this.resultFile = file;
      if (this.released) return;
      this.readScheduler = new SortMergeResultPartitionReadScheduler(
        this.readBufferPool,
        file,
        this.initialSequenceNumber,
      );
      this.consumable = true;
      this.partitionManager.onPartitionConsumable(this);
    });
  }

  /** True once the files are complete and until the partition is released. */
  isConsumable(): boolean {
    return this.consumable && !this.released;
  }

  /**
   * Readers fail with `cause` (or a cancellation), and once the running file operation and every
   * in-flight read settled, the files are closed and deleted. The worker's FileChannelManager
   * tracks the deletion, so closing the environment waits for it.
   */
  protected releaseInternal(cause: Error | undefined): void {
    this.pending = undefined;
    this.availability.resetAvailable();
    const readerCause =
      cause ?? new CancelledError(`${this.description} was released; its files are deleted`);
    this.fileChannelManager.track(this.deleteFiles(readerCause));
  }

  private async deleteFiles(readerCause: Error): Promise<void> {
    await this.work;
    this.returnSegments();
    await this.readScheduler?.release(readerCause);
    if (this.resultFile !== undefined) await this.resultFile.delete();
    else await this.fileWriter?.abort();
  }

  /**
   * The writer is done: the segments go back to the pool, which is destroyed, once the running
   * file operation finished (at once when none runs). The files stay until released.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = undefined;
    void this.work.then(() => this.returnSegments());
  }

  // ------------------------------------------------------------------------------ availability

  /** False while a file operation runs or a record waits for the data buffer. */
  isAvailable(): boolean {
    return this.released || (this.queuedOperations === 0 && this.pending === undefined);
  }

  /** Resolves when the partition is available again (a spill or `finish()` completed). */
  protected currentAvailabilityFuture(): Promise<void> {
    return this.availability.getAvailableFuture();
  }

  // ---------------------------------------------------------------------------------- writing

  /** Appends one record for `targetSubpartition` to the sort buffer (see the class comment). */
  emitRecord(record: Uint8Array, targetSubpartition: number): void {
    this.checkEmit(record.length);
    this.checkSubpartitionIndex(targetSubpartition, "target subpartition");
    if (!this.tryAppend(record, targetSubpartition, false)) {
      this.appendLater(record, targetSubpartition, false);
    }
  }

  /** Appends one record for every subpartition; it is stored once, in a broadcast region. */
  broadcastRecord(record: Uint8Array): void {
    this.checkEmit(record.length);
    if (!this.tryAppend(record, 0, true)) this.appendLater(record, 0, true);
  }

  /** Writes `event` after the data so far, as a broadcast region (priority has no meaning here). */
  broadcastEvent(event: RuntimeEvent, _isPriority = false): void {
    this.checkInProduceState();
    if (this.pending !== undefined) {
      throw new IllegalStateError(
        `${this.description}: broadcastEvent() while a record waits; await getAvailableFuture() first`,
      );
    }
    const buffer = EventSerializer.toBuffer(event);
    this.enqueue(async () => {
      await this.spill();
      await this.writeEventRegion(buffer);
    });
  }

  /** Nothing to flush: data becomes readable when the partition finished (Flink: a no-op). */
  flush(_targetSubpartition: number): void {}

  flushAll(): void {}

  protected pendingRecordState(): string | undefined {
    return this.pending === undefined
      ? undefined
      : "is spilling: a record still waits for the sort buffer";
  }

  /**
   * Also throws before `setup()`: the data buffer is made of the pool's segments. A file
   * operation that failed released the partition: the writer's next call throws that failure (a
   * full disk, say), the task's root cause, rather than a cancellation wrapping it.
   */
  protected override checkInProduceState(): void {
    if (this.writeFailure !== undefined) throw this.writeFailure;
    super.checkInProduceState();
    this.setUpPool();
  }

  /** The synchronous fast path: append to the sort buffer when nothing is queued before. */
  private tryAppend(record: Uint8Array, target: number, isBroadcast: boolean): boolean {
    const buffer = this.dataBuffer;
    if (this.queuedOperations > 0 || buffer === undefined) return false;
    if (isBroadcast !== this.isBroadcastMode) {
      // A region is either unicast or broadcast: switch only on an empty buffer.
      if (!buffer.isEmpty()) return false;
      this.isBroadcastMode = isBroadcast;
    }
    return buffer.append(record, target);
  }

  private appendLater(record: Uint8Array, target: number, isBroadcast: boolean): void {
    // A private copy: the caller reuses its serialization buffer for the next record.
    const pending: PendingRecord = { bytes: Uint8Array.from(record), target, isBroadcast };
    this.pending = pending;
    this.enqueue(async () => {
      const subpartition = isBroadcast ? 0 : target;
      const current = this.dataBuffer as DataBuffer;
      if (isBroadcast === this.isBroadcastMode || current.isEmpty()) {
        this.isBroadcastMode = isBroadcast;
        if (current.append(pending.bytes, subpartition)) {
          this.pending = undefined;
          return;
        }
      }
      await this.spill();
      this.isBroadcastMode = isBroadcast;
      if (!(this.dataBuffer as DataBuffer).append(pending.bytes, subpartition)) {
        await this.writeLargeRecord(pending);
      }
      this.pending = undefined;
    });
  }

  /** Runs `operation` after every operation queued before; the partition is unavailable meanwhile. */
  private enqueue(operation: () => Promise<void>): void {
    this.queuedOperations++;
    this.availability.resetUnavailable();
    this.work = this.work
      .then(async () => {
        if (!this.released) await operation();
      })
      .catch((error: unknown) => {
        // After a release, operations stop with the cancellation below: nothing to report.
        if (this.released) return;
        this.writeFailure = error as Error;
        this.release(this.writeFailure);
      })
      .finally(() => {
        this.queuedOperations--;
        if (this.queuedOperations === 0) this.availability.resetAvailable();
      });
  }

  // ---------------------------------------------------------------------------- segments

  /** Takes free segments of the pool up to its maximum, without waiting. */
  private takeSegments(): void {
    const pool = this.bufferPool as LocalBufferPool;
    while (this.segments.length < pool.getMaxNumberOfMemorySegments()) {
      const segment = pool.requestMemorySegment();
      if (segment === undefined) break;
      this.segments.push(segment);
    }
  }

  /** Waits until the pool gave at least the minimum of segments (others still hold them). */
  private async awaitSegments(): Promise<void> {
    const pool = this.bufferPool as LocalBufferPool;
    this.takeSegments();
    while (this.segments.length < MIN_SEGMENTS) {
      await pool.getAvailableFuture();
      this.checkNotReleased();
      this.takeSegments();
    }
    this.createDataBuffer();
  }

  /**
   * With several segments per subpartition, all of them fill per subpartition (no write buffers
   * needed: the segments are written as they are). Otherwise the held segments are split into
   * write buffers (Flink: up to 8 MiB, at most half) and a sort buffer.
   */
  private createDataBuffer(): void {
    const total = this.segments.length;
    if (total >= HASH_BUFFER_SEGMENTS_PER_SUBPARTITION * this.numberOfSubpartitions) {
      this.writeSegments = [];
      this.dataBuffer = new HashBasedDataBuffer(
        this.segments,
        this.numberOfSubpartitions,
        this.subpartitionOrder,
      );
      return;
    }
    const numberOfWriteBuffers = Math.max(
      1,
      Math.min(Math.floor(total / 2), this.writeBufferBudget()),
    );
    this.writeSegments = this.segments.slice(0, numberOfWriteBuffers);
    this.dataBuffer = new SortBasedDataBuffer(
      this.segments.slice(numberOfWriteBuffers),
      this.numberOfSubpartitions,
      this.subpartitionOrder,
    );
  }

  /** Buffers written per batch at most (Flink: 8 MiB of them, at most 512). */
  private writeBufferBudget(): number {
    return Math.min(
      MAX_WRITE_BUFFERS,
      Math.max(1, Math.floor(WRITE_BUFFER_BYTES / this.segmentSize)),
    );
  }

  /**
   * After a spill, segments beyond the pool's guarantee go back so that other pools of the worker
   * can have them; the next sort buffer takes what is free again.
   */
  private resizeAfterSpill(): void {
    const pool = this.bufferPool as LocalBufferPool;
    const required = pool.getNumberOfRequiredMemorySegments();
    while (this.segments.length > required) pool.recycle(this.segments.pop() as MemorySegment);
    this.takeSegments();
    this.createDataBuffer();
  }

  private returnSegments(): void {
    const pool = this.bufferPool;
    if (pool === undefined) return;
    for (const segment of this.segments.splice(0)) pool.recycle(segment);
    this.writeSegments = [];
    this.dataBuffer = undefined;
    if (this.closed || this.released) pool.destroy();
  }

  private checkNotReleased(): void {
    if (this.released) throw new CancelledError(`${this.description} was released`);
  }

  // ----------------------------------------------------------------------------- file writes

  /** Writes the sort buffer's records as one region, run by run, and empties it. */
  private async spill(): Promise<void> {
    const buffer = this.dataBuffer;
    if (buffer === undefined || buffer.isEmpty()) return;
    const writer = this.fileWriter as PartitionedFileWriter;
    buffer.finish();
    writer.startRegion(this.isBroadcastMode);
    const copies = buffer.copiesIntoWriteBuffers;
    // Compressed copies stay on the heap until written: when the buffer hands out its own
    // segments, flush at the write-buffer budget so that they never add more than it.
    const compressedLimit =
      copies || this.compressor === undefined ? Number.POSITIVE_INFINITY : this.writeBufferBudget();
    let unflushed = 0;
    let free = [...this.writeSegments];
    for (let s = buffer.currentSubpartition(); s !== -1; s = buffer.currentSubpartition()) {
      writer.startRun(s);
      for (;;) {
        if (copies ? free.length === 0 : unflushed >= compressedLimit) {
          await writer.flush();
          this.checkNotReleased();
          free = [...this.writeSegments];
          unflushed = 0;
        }
        const writeBuffer = copies ? free.pop() : undefined;
        const next = buffer.nextBuffer(writeBuffer);
        if (next === undefined) {
          if (writeBuffer !== undefined) free.push(writeBuffer);
          break;
        }
        this.appendDataBuffer(writer, next.segment, next.size);
        unflushed++;
      }
      writer.endRun();
    }
    await writer.endRegion();
    this.checkNotReleased();
    this.resizeAfterSpill();
  }

  /** A record larger than the whole sort buffer: its own region, written through all segments. */
  private async writeLargeRecord(record: PendingRecord): Promise<void> {
    const writer = this.fileWriter as PartitionedFileWriter;
    const bytes = record.bytes;
    writer.startRegion(record.isBroadcast);
    writer.startRun(record.target);
    this.isBroadcastMode = record.isBroadcast;
    let free = [...this.segments];
    let position = 0;
    while (position < bytes.length) {
      if (free.length === 0) {
        await writer.flush();
        this.checkNotReleased();
        free = [...this.segments];
      }
      const segment = free.pop() as MemorySegment;
      const length = Math.min(this.segmentSize, bytes.length - position);
      segment.memory.set(bytes.subarray(position, position + length), 0);
      this.appendDataBuffer(writer, segment, length);
      position += length;
    }
    writer.endRun();
    await writer.endRegion();
    this.checkNotReleased();
  }

  /** An event (EndOfPartition, EndOfData): a broadcast region of one buffer, never compressed. */
  private async writeEventRegion(event: NetworkBuffer): Promise<void> {
    const writer = this.fileWriter as PartitionedFileWriter;
    writer.startRegion(true);
    writer.startRun(0);
    writer.appendBuffer(event);
    writer.endRun();
    this.counters.numBuffersOut += this.numberOfSubpartitions;
    this.counters.numBytesOut += event.getSize() * this.numberOfSubpartitions;
    await writer.endRegion();
    event.recycleBuffer();
    this.checkNotReleased();
  }

  private appendDataBuffer(
    writer: PartitionedFileWriter,
    segment: MemorySegment,
    size: number,
  ): void {
    // The segment stays the partition's: this buffer is only a view for the writer.
    const buffer = new NetworkBuffer(segment, FreeingBufferRecycler, DataType.DATA_BUFFER, size);
    const copies = this.isBroadcastMode ? this.numberOfSubpartitions : 1;
    this.counters.numBuffersOut += copies;
    this.counters.numBytesOut += size * copies;
    const written =
      this.compressor === undefined ? buffer : this.compressor.compressToIntermediateBuffer(buffer);
    const counters = this.shuffleCounters;
    if (counters !== undefined) {
      counters.bytesBeforeCompression += size;
      counters.bytesAfterCompression += written.readableBytes();
    }
    writer.appendBuffer(written);
  }

  // -------------------------------------------------------------------------- reader side

  /**
   * A new view of subpartition `index`, reading the finished file from its start. Any number of
   * views may exist at once.
   */
  protected createSubpartitionViewInternal(
    index: number,
    listener: BufferAvailabilityListener,
  ): ResultSubpartitionView {
    const scheduler = this.readScheduler;
    if (!this.consumable || scheduler === undefined) {
      throw new IllegalStateError(
        `${this.description}: cannot read a blocking partition before it finished`,
      );
    }
    return scheduler.createSubpartitionReader(listener, index);
  }

  /** Blocking partitions queue nothing in memory (Flink reports 0), in any subpartition. */
  getNumberOfQueuedBuffers(_subpartition?: number): number {
    return 0;
  }

  /** Nor any bytes (Flink's `outputQueueSize` of a blocking partition is 0). */
  getNumberOfQueuedBytes(): number {
    return 0;
  }

  /** The data and index file paths (known from setup on). */
  getFilePaths(): { readonly dataFile: string; readonly indexFile: string } | undefined {
    const base = this.fileWriter?.basePath;
    return base === undefined
      ? undefined
      : { dataFile: base + DATA_FILE_SUFFIX, indexFile: base + INDEX_FILE_SUFFIX };
  }

  /** What the finished files hold, or `undefined` before they are complete. */
  getStatistics(): SortMergePartitionStatistics | undefined {
    const file = this.resultFile;
    if (file === undefined) return undefined;
    const before = this.compressor?.getNumberOfBytesBeforeCompression();
    const after = this.compressor?.getNumberOfBytesAfterCompression();
    return {
      numberOfRegions: file.numberOfRegions,
      dataFileBytes: file.dataFileSize,
      bytesBeforeCompression: before ?? this.counters.numBytesOut,
      bytesAfterCompression: after ?? this.counters.numBytesOut,
    };
  }
}
