import {
  AVAILABLE,
  AvailabilityHelper,
  type BufferBuilder,
  type BufferConsumer,
  CancelledError,
  type CheckpointBarrier,
  deferred,
  EndOfPartitionEvent,
  EventSerializer,
  IllegalArgumentError,
  IllegalStateError,
  isTimeoutable,
  isUnalignedCheckpoint,
  type LocalBufferPool,
  type RuntimeEvent,
} from "@sluice/core";
import type { ChannelStateWriter } from "@sluice/runtime-api";
import { AlignmentTimers } from "./alignment-timers.js";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import { PipelinedSubpartition, type SubpartitionParent } from "./pipelined-subpartition.js";
import { ResultPartition, type ResultPartitionOptions } from "./result-partition.js";
import type { ResultSubpartitionView } from "./result-subpartition-view.js";
import { SharedSegmentWriter } from "./shared-segment-writer.js";

/**
 * Construction parameters of a PipelinedResultPartition; its pool is sized per Flink's
 * NettyShuffleUtils.
 */
export interface PipelinedResultPartitionOptions extends ResultPartitionOptions {
  /**
   * The smallest buffer size a consumer may ask for with NewBufferSize
   * (`taskmanager.memory.min-segment-size`); smaller requests are raised to it. Default 1.
   */
  readonly minBufferSize?: number;
  /**
   * The sequence number each subpartition's first buffer gets (default 0, as in Flink): tests
   * start near 2³¹ to cross the int32 wrap-around without sending 2³¹ buffers.
   */
  readonly initialSequenceNumber?: number;
}

/** The tail of a record that came whole. */
const NO_TAIL = new Uint8Array(0);

/** A record whose remaining bytes wait for a buffer (the partition ran out mid-record). */
interface PendingRecord {
  /** Subpartition index, or -1 for a broadcast record. */
  readonly target: number;
  readonly bytes: Uint8Array;
  offset: number;
}

/**
 * A pipelined result partition (Flink's BufferWritingResultPartition + PipelinedResultPartition):
 * one PipelinedSubpartition per consumer subtask, one output LocalBufferPool, and the record
 * writing that copies framed records into BufferBuilders, spanning buffers as needed.
 *
 * Writing never blocks the event loop. `isAvailable()` turns false when the pool is exhausted (or
 * one subpartition holds max-buffers-per-channel, or overdraft is in use) and producers await
 * `getAvailableFuture()`. A record that runs out of buffers half-way keeps its remaining bytes
 * and completes as soon as a buffer is recycled; emitting another record before that is a
 * contract violation (IllegalStateError), the analogue of Flink's task thread being blocked.
 */
export class PipelinedResultPartition extends ResultPartition implements SubpartitionParent {
  private readonly subpartitions: PipelinedSubpartition[];
  /**
   * Set when the pool is guaranteed fewer buffers than one per subpartition plus one (the
   * network memory was short): unicast records then go into segments shared by all
   * subpartitions instead of a builder per subpartition, which such a pool cannot keep.
   */
  private sharedSegmentWriter: SharedSegmentWriter | undefined;
  private readonly unicastBuilders: (BufferBuilder | undefined)[];
  private broadcastBuilder: BufferBuilder | undefined;
  private pending: PendingRecord | undefined;
  private channelStateWriter: ChannelStateWriter | undefined;
  /** The output-side alignment timeout's timers, one per checkpoint with a queued barrier. */
  private readonly alignmentTimers = new AlignmentTimers();
  private readonly pendingAvailability = new AvailabilityHelper();
  /**
   * Flink's n + 1 users: one per subpartition (dropped when its view is released) plus the
   * producer itself (dropped on `close()`), so a pipelined partition is never released under a
   * producer that is still open.
   */
  private numberOfUsers: number;
  private producerClosed = false;
  private readonly releaseFuture = deferred();
  /**
   * Per subpartition: its consumer acknowledged that it processed every record (it read the
   * EndOfData; Flink's AckAllUserRecordsProcessed).
   */
  private readonly allRecordsProcessed: boolean[];
  private numNotAllRecordsProcessed: number;
  private readonly allDataProcessed = deferred();

  constructor(options: PipelinedResultPartitionOptions) {
    super("ResultPartition", options);
    this.subpartitions = Array.from(
      { length: this.numberOfSubpartitions },
      (_, i) =>
        new PipelinedSubpartition(i, this, options.minBufferSize, options.initialSequenceNumber),
    );
    this.unicastBuilders = new Array<BufferBuilder | undefined>(this.numberOfSubpartitions);
    this.numberOfUsers = this.numberOfSubpartitions + 1;
    this.allRecordsProcessed = new Array<boolean>(this.numberOfSubpartitions).fill(false);
    this.numNotAllRecordsProcessed = this.numberOfSubpartitions;
    // Nobody waits for it in a job without final checkpoints; a release must not go unhandled.
    this.allDataProcessed.promise.catch(() => {});
  }

  // ------------------------------------------------------------------------------- lifecycle

  /** Registers with the partition manager: readable from now on. */
  protected setupInternal(pool: LocalBufferPool): void {
    if (pool.getNumberOfRequiredMemorySegments() <= this.numberOfSubpartitions) {
      this.sharedSegmentWriter = new SharedSegmentWriter(pool, this.numberOfSubpartitions, {
        addSlice: (subpartition, consumer, partialRecordLength) => {
          this.counters.numBytesOut += consumer.getWrittenBytes();
          this.counters.numBuffersOut++;
          (this.subpartitions[subpartition] as PipelinedSubpartition).add(
            consumer,
            partialRecordLength,
          );
        },
      });
    }
    this.partitionManager.registerResultPartition(this);
  }

  /** Flushes and appends EndOfPartition to every subpartition; no record is accepted after. */
  finish(): void {
    this.checkInProduceState();
    if (this.pending !== undefined) {
      throw new IllegalStateError(
        `${this.description}: finish() while a record is still waiting for buffers; await getAvailableFuture() first`,
      );
    }
    this.finishBuilders();
    for (const subpartition of this.subpartitions) {
      subpartition.finish(EventSerializer.toBufferConsumer(EndOfPartitionEvent.INSTANCE, false));
    }
    this.finished = true;
  }

  /** Pipelined data is read while it is produced: consumable from registration on. */
  isConsumable(): boolean {
    return !this.released;
  }

  /** Releases every buffer (queued data included) and the output pool. */
  protected releaseInternal(cause: Error | undefined): void {
    this.closeBuilders();
    this.alignmentTimers.clearAll();
    this.pending = undefined;
    for (const subpartition of this.subpartitions) subpartition.release();
    this.bufferPool?.destroy();
    this.pendingAvailability.resetAvailable();
    this.releaseFuture.resolve();
    if (this.numNotAllRecordsProcessed > 0) {
      this.allDataProcessed.reject(
        new CancelledError(
          `${this.description} was released before ${this.numNotAllRecordsProcessed} of its ${this.numberOfSubpartitions} consumers processed all its records`,
          cause === undefined ? undefined : { cause },
        ),
      );
    }
  }

  getReleaseFuture(): Promise<void> {
    return this.releaseFuture.promise;
  }

  /**
   * Resolves once the consumer of every subpartition acknowledged that it processed all the
   * records before the EndOfData it read (Flink's `getAllDataProcessedFuture`); rejects with a
   * CancelledError when the partition is released first. A task with final checkpoints finishes
   * only then, so it is never recorded as finished while a consumer still holds its records.
   */
  getAllDataProcessedFuture(): Promise<void> {
    return this.allDataProcessed.promise;
  }

  /**
   * The consumer of subpartition `index` processed all its records (Flink's
   * `onSubpartitionAllDataProcessed`); repeated acknowledgements count once.
   */
  onSubpartitionAllDataProcessed(index: number): void {
    if (this.allRecordsProcessed[index] !== false) return;
    this.allRecordsProcessed[index] = true;
    this.numNotAllRecordsProcessed--;
    if (this.numNotAllRecordsProcessed === 0) this.allDataProcessed.resolve();
  }

  /**
   * Closes the writer side: the pool is destroyed lazily (queued buffers still reach readers and
   * return their segments when recycled).
   */
  close(): void {
    this.closeBuilders();
    this.bufferPool?.destroy();
    // A record still waiting for buffers can never complete now: drop it (resuming it would
    // request from the destroyed pool in a promise callback) and wake its writer.
    this.pending = undefined;
    this.pendingAvailability.resetAvailable();
    if (this.producerClosed) return;
    this.producerClosed = true;
    this.dropUser();
  }

  // ------------------------------------------------------------------------------ availability

  isAvailable(): boolean {
    const available =
      this.pending === undefined &&
      (this.bufferPool === undefined ||
        this.bufferPool.isAvailable() ||
        this.canWriteWithoutNewBuffer());
    return available || this.released;
  }

  protected currentAvailabilityFuture(): Promise<void> {
    if (this.pending !== undefined) return this.pendingAvailability.getAvailableFuture();
    if (this.bufferPool === undefined || this.released) return AVAILABLE;
    if (this.canWriteWithoutNewBuffer()) return AVAILABLE;
    return this.bufferPool.getAvailableFuture();
  }

  /**
   * With shared segments, whether the next record may be written although the pool is dry: a
   * held shared segment takes records until it is full, and an open broadcast buffer is
   * finished by the next record, so readers can then take it. Waiting for the pool instead
   * could wait for ever when that buffer is the pool's only one (a fallback guarantee can be
   * 1): every other buffer has gone to readers, and this one is not readable before it is
   * finished. When the write does need a buffer, the record waits as pending, with nothing left
   * unfinished.
   */
  private canWriteWithoutNewBuffer(): boolean {
    const shared = this.sharedSegmentWriter;
    return shared !== undefined && (shared.hasSegment() || this.broadcastBuilder !== undefined);
  }

  // ---------------------------------------------------------------------------------- writing

  /**
   * With shared network memory (slots on threads): where each subpartition's next record starts,
   * modulo 8, so that the writer serializes it at the same alignment and V8 copies it a word at a
   * time. Undefined before `setup()`, with ordinary memory, and in the memory-constrained mode,
   * whose shared segments take each record after the last one of any subpartition.
   */
  getRecordAlignment(): ((targetSubpartition: number) => number) | undefined {
    if (this.bufferPool?.isSharedMemory() !== true || this.sharedSegmentWriter !== undefined) {
      return undefined;
    }
    return this.recordAlignment;
  }

  private readonly recordAlignment = (targetSubpartition: number): number => {
    const builder = this.unicastBuilders[targetSubpartition];
    // A new buffer starts at its segment's start: a multiple of the segment size, a power of 2.
    return builder === undefined || builder.isFull() ? 0 : builder.getWriteAlignment();
  };

  /**
   * Appends one framed record (its length and payload, as the writer framed it) to subpartition
   * `targetSubpartition`. The record may span any number of buffers.
   */
  emitRecord(record: Uint8Array, targetSubpartition: number): void {
    // Every check in one condition, the throwing out of line: this runs once per record, and a
    // small body is what lets the JIT inline it into the writer.
    if (
      this.released ||
      this.finished ||
      this.pending !== undefined ||
      record.length > this.maxFramedRecordSize ||
      !(targetSubpartition >= 0 && targetSubpartition < this.numberOfSubpartitions)
    ) {
      this.throwEmitRejected(record.length, targetSubpartition);
    }
    if (this.broadcastBuilder !== undefined) this.finishBroadcastBuilder();
    // Fast path: the whole framed record fits the current buffer.
    const current = this.unicastBuilders[targetSubpartition];
    if (current?.appendFullyAndCommit(record)) {
      if (current.isFull()) this.finishUnicastBuilder(targetSubpartition);
      return;
    }
    this.emitSpanningRecord(record, targetSubpartition);
  }

  /**
   * The rest of {@link emitRecord}, out of line so that the fast path stays small enough to
   * inline: the record starts a new buffer, spans buffers, or waits for buffers.
   */
  private emitSpanningRecord(record: Uint8Array, targetSubpartition: number): void {
    const written = this.appendUnicastFrom(targetSubpartition, record, NO_TAIL, 0);
    if (written < record.length) this.startPending(targetSubpartition, record, NO_TAIL, written);
  }

  /**
   * Appends one framed record given as `head` then `tail` to subpartition `targetSubpartition`:
   * the same bytes {@link emitRecord} writes for the two joined, copied into the buffers from
   * each part in turn, so a large record goes from the writer's value into the segments without
   * being joined first. What still waits for buffers is copied, as for any record.
   */
  emitRecordParts(head: Uint8Array, tail: Uint8Array, targetSubpartition: number): void {
    const length = head.length + tail.length;
    if (
      this.released ||
      this.finished ||
      this.pending !== undefined ||
      length > this.maxFramedRecordSize ||
      !(targetSubpartition >= 0 && targetSubpartition < this.numberOfSubpartitions)
    ) {
      this.throwEmitRejected(length, targetSubpartition);
    }
    if (this.broadcastBuilder !== undefined) this.finishBroadcastBuilder();
    if (this.sharedSegmentWriter !== undefined) {
      // Shared segments take one run of bytes per write (the memory-constrained fallback): join.
      const joined = new Uint8Array(length);
      joined.set(head);
      joined.set(tail, head.length);
      this.emitSpanningRecord(joined, targetSubpartition);
      return;
    }
    const written = this.appendUnicastFrom(targetSubpartition, head, tail, 0);
    if (written < length) this.startPending(targetSubpartition, head, tail, written);
  }

  /** Appends one record to every subpartition, serialized once into shared buffers. */
  broadcastRecord(record: Uint8Array): void {
    this.checkEmit(record.length);
    this.finishUnicastBuilders();
    const written = this.appendBroadcastFrom(record, 0);
    if (written < record.length) this.startPending(-1, record, NO_TAIL, written);
  }

  /**
   * Sends `event` to every subpartition after the data written so far (or ahead of it when
   * `isPriority`). Events take no buffer from the pool and need no credit downstream. A
   * priority barrier of an unaligned checkpoint hands the data it overtakes in each
   * subpartition to the channel state writer. A timeoutable aligned barrier (exactly-once,
   * aligned, with an alignment timeout) turns unaligned in every subpartition that still holds
   * it once the timeout, counted from the barrier's timestamp (the checkpoint's start), passed;
   * a cancellation marker of its checkpoint stops that.
   */
  broadcastEvent(event: RuntimeEvent, isPriority = false): void {
    this.checkInProduceState();
    if (this.pending !== undefined) {
      throw new IllegalStateError(
        `${this.description}: broadcastEvent() while a record waits for buffers; await getAvailableFuture() first`,
      );
    }
    this.finishBuilders();
    if (event.kind === "CancelCheckpointMarker") this.abortAlignmentTimeout(event.checkpointId);
    const consumer = EventSerializer.toBufferConsumer(event, isPriority);
    if (!isPriority && event.kind === "CheckpointBarrier" && isTimeoutable(event.options)) {
      try {
        this.broadcastTimeoutableBarrier(consumer, event);
      } finally {
        consumer.close();
      }
      return;
    }
    const unalignedCheckpointId =
      isPriority && event.kind === "CheckpointBarrier" && isUnalignedCheckpoint(event.options)
        ? event.id
        : undefined;
    try {
      for (const subpartition of this.subpartitions) {
        subpartition.add(consumer.copy(), 0, false, unalignedCheckpointId);
      }
    } finally {
      consumer.close();
    }
  }

  private broadcastTimeoutableBarrier(consumer: BufferConsumer, barrier: CheckpointBarrier): void {
    let queued = false;
    for (const subpartition of this.subpartitions) {
      if (subpartition.addTimeoutableBarrier(consumer.copy(), barrier)) queued = true;
    }
    if (!queued) return;
    const deadline = Number(barrier.timestamp + barrier.options.alignedCheckpointTimeout);
    // When it passes, the checkpoint's queued barriers turn unaligned.
    this.alignmentTimers.start(barrier.id, deadline, () => {
      for (const subpartition of this.subpartitions) subpartition.alignedBarrierTimeout(barrier.id);
    });
  }

  private abortAlignmentTimeout(checkpointId: bigint): void {
    for (const subpartition of this.subpartitions) {
      subpartition.abortTimeoutableBarrier(checkpointId);
    }
    this.alignmentTimers.clear(checkpointId);
  }

  /** A subpartition's timeoutable barrier left it; the timer ends with the last one. */
  onTimeoutableBarrierDone(checkpointId: bigint): void {
    if (!this.alignmentTimers.has(checkpointId)) return;
    for (const subpartition of this.subpartitions) {
      if (subpartition.hasTimeoutableBarrier(checkpointId)) return;
    }
    this.alignmentTimers.clear(checkpointId);
  }

  /**
   * The checkpoints whose output-side alignment timer runs: a timeoutable barrier of each is
   * still queued in a subpartition.
   */
  getPendingAlignmentTimeouts(): bigint[] {
    return this.alignmentTimers.pending();
  }

  /** True while a record waits for buffers: no event can be sent until it completes. */
  hasPendingRecord(): boolean {
    return this.pending !== undefined;
  }

  /** Where the data unaligned barriers overtake goes (see {@link broadcastEvent}). */
  setChannelStateWriter(writer: ChannelStateWriter): void {
    this.channelStateWriter = writer;
  }

  /** The writer set with {@link setChannelStateWriter}, asked by the subpartitions. */
  getChannelStateWriter(): ChannelStateWriter | undefined {
    return this.channelStateWriter;
  }

  /**
   * Re-emits recovered output channel state: `data` are raw bytes of subpartition
   * `targetSubpartition`'s record stream (they may start or end inside a record), written as
   * they are, before any new record. Bytes that find no buffer wait as a pending record does.
   */
  addRecoveredState(targetSubpartition: number, data: Uint8Array): void {
    this.checkInProduceState();
    if (this.pending !== undefined) {
      throw new IllegalStateError(
        `${this.description}: recovered state added while a record waits for buffers; await getAvailableFuture() first`,
      );
    }
    this.checkSubpartitionIndex(targetSubpartition, "recovered state for subpartition");
    if (data.length === 0) return;
    if (this.broadcastBuilder !== undefined) this.finishBroadcastBuilder();
    const written = this.appendUnicastFrom(targetSubpartition, data, NO_TAIL, 0);
    if (written < data.length) this.startPending(targetSubpartition, data, NO_TAIL, written);
  }

  flush(targetSubpartition: number): void {
    this.checkSubpartitionIndex(targetSubpartition);
    // A shared segment is sealed whole: its slices of the other subpartitions go too.
    this.sharedSegmentWriter?.seal();
    (this.subpartitions[targetSubpartition] as PipelinedSubpartition).flush();
  }

  flushAll(): void {
    this.sharedSegmentWriter?.seal();
    for (const subpartition of this.subpartitions) subpartition.flush();
  }

  /** Throws what {@link emitRecord}'s combined check found wrong. */
  private throwEmitRejected(length: number, targetSubpartition: number): never {
    this.checkEmit(length);
    this.checkSubpartitionIndex(targetSubpartition, "target subpartition");
    // Not reached: the condition in emitRecord holds only when one of the checks above throws.
    throw new IllegalStateError(`${this.description}: emitRecord rejected`);
  }

  protected pendingRecordState(): string | undefined {
    return this.pending === undefined
      ? undefined
      : "is back-pressured: a record still waits for buffers";
  }

  /**
   * Writes as much of the record `head` + `tail` from `offset` on as buffers allow; returns the
   * new offset (into the two parts taken as one run). A new buffer is trimmed to no less than
   * what is left of the record. Shared segments take records whole in `head` only.
   */
  private appendUnicastFrom(
    target: number,
    head: Uint8Array,
    tail: Uint8Array,
    offset: number,
    continuesRecord = false,
  ): number {
    if (this.sharedSegmentWriter !== undefined) {
      return this.sharedSegmentWriter.write(target, head, offset, continuesRecord);
    }
    const headLength = head.length;
    const length = headLength + tail.length;
    let position = offset;
    let builder = this.unicastBuilders[target];
    while (position < length) {
      if (builder === undefined || builder.isFull()) {
        if (builder !== undefined) {
          if (this.growWhenPoolIsDry(builder)) continue;
          this.finishUnicastBuilder(target);
        }
        builder = this.requestNewUnicastBuilder(
          target,
          position > 0 ? length - position : 0,
          length - position,
        );
        if (builder === undefined) return position;
      }
      position +=
        position < headLength
          ? builder.appendAndCommit(head, position, headLength - position)
          : builder.appendAndCommit(tail, position - headLength, length - position);
    }
    if (builder?.isFull()) this.finishUnicastBuilder(target);
    return position;
  }

  private appendBroadcastFrom(source: Uint8Array, offset: number): number {
    let position = offset;
    let builder = this.broadcastBuilder;
    while (position < source.length) {
      if (builder === undefined || builder.isFull()) {
        if (builder !== undefined) {
          if (this.growWhenPoolIsDry(builder)) continue;
          this.finishBroadcastBuilder();
        }
        builder = this.requestNewBroadcastBuilder(
          position > 0 ? source.length - position : 0,
          source.length - position,
        );
        if (builder === undefined) return position;
      }
      position += builder.appendAndCommit(source, position, source.length - position);
    }
    if (builder?.isFull()) this.finishBroadcastBuilder();
    return position;
  }

  /**
   * A debloated builder that is full while the pool has no buffer to give grows back towards its
   * segment's size (Flink's answer to hard back-pressure with debloating): the record goes on
   * in memory the builder already holds instead of waiting. True when it grew.
   */
  private growWhenPoolIsDry(builder: BufferBuilder): boolean {
    if ((this.bufferPool as LocalBufferPool).isAvailable()) return false;
    const capacity = builder.getMaxCapacity();
    builder.trim(Number.MAX_SAFE_INTEGER);
    return builder.getMaxCapacity() > capacity;
  }

  /**
   * A new builder for subpartition `target`, trimmed to the consumer's debloated size but never
   * below `recordBytes`, what is left of the record to write: a record that fits a segment is
   * never split over small buffers (Flink keeps a record whole in its first buffer).
   */
  private requestNewUnicastBuilder(
    target: number,
    partialRecordLength: number,
    recordBytes: number,
  ): BufferBuilder | undefined {
    const pool = this.setUpPool();
    const builder = pool.requestBufferBuilder(target);
    if (builder === undefined) return undefined;
    const subpartition = this.subpartitions[target] as PipelinedSubpartition;
    builder.trim(Math.max(subpartition.bufferSizeHint(), recordBytes));
    this.unicastBuilders[target] = builder;
    // The consumer is queued before any byte is written (the seeds: queued on request, not when full).
    subpartition.add(builder.createBufferConsumerFromBeginning(), partialRecordLength);
    return builder;
  }

  /**
   * A new broadcast builder, shared by every subpartition: trimmed to the smallest debloated size
   * any consumer asked for (the buffer goes to all of them), never below `recordBytes`.
   */
  private requestNewBroadcastBuilder(
    partialRecordLength: number,
    recordBytes: number,
  ): BufferBuilder | undefined {
    const pool = this.setUpPool();
    const builder = pool.requestBufferBuilder();
    if (builder === undefined) return undefined;
    let hint = Number.MAX_SAFE_INTEGER;
    for (const subpartition of this.subpartitions) {
      hint = Math.min(hint, subpartition.bufferSizeHint());
    }
    builder.trim(Math.max(hint, recordBytes));
    this.broadcastBuilder = builder;
    const consumer = builder.createBufferConsumerFromBeginning();
    try {
      for (const subpartition of this.subpartitions) {
        subpartition.add(consumer.copy(), partialRecordLength);
      }
    } finally {
      consumer.close();
    }
    return builder;
  }

  private startPending(target: number, head: Uint8Array, tail: Uint8Array, offset: number): void {
    // Keep a private copy of what is left: the caller reuses its serialization buffer, and a
    // tail is the caller's value, for the next record.
    const bytes = new Uint8Array(head.length + tail.length - offset);
    if (offset < head.length) {
      bytes.set(head.subarray(offset));
      bytes.set(tail, head.length - offset);
    } else {
      bytes.set(tail.subarray(offset - head.length));
    }
    this.pending = { target, bytes, offset: 0 };
    this.pendingAvailability.resetUnavailable();
    this.waitAndResumePending();
  }

  private waitAndResumePending(): void {
    const pool = this.bufferPool as LocalBufferPool;
    void pool.getAvailableFuture().then(() => this.resumePending());
  }

  private resumePending(): void {
    const pending = this.pending;
    if (pending === undefined || this.released) return;
    const position =
      pending.target >= 0
        ? this.appendUnicastFrom(pending.target, pending.bytes, NO_TAIL, pending.offset, true)
        : this.appendBroadcastFrom(pending.bytes, pending.offset);
    pending.offset = position;
    if (position < pending.bytes.length) {
      // The pool turned available but another request took the buffer first; wait again. The
      // pool reports unavailable while it has nothing to give, so this does not spin.
      if ((this.bufferPool as LocalBufferPool).isAvailable()) {
        setImmediate(() => this.resumePending());
      } else {
        this.waitAndResumePending();
      }
      return;
    }
    this.pending = undefined;
    this.pendingAvailability.resetAvailable();
  }

  private finishUnicastBuilder(target: number): void {
    const builder = this.unicastBuilders[target];
    if (builder === undefined) return;
    this.counters.numBytesOut += builder.finish();
    this.counters.numBuffersOut++;
    builder.close();
    this.unicastBuilders[target] = undefined;
    // A finished buffer may now be the first one: let the subpartition decide to notify.
    (this.subpartitions[target] as PipelinedSubpartition).onBuilderFinished();
  }

  private finishUnicastBuilders(): void {
    this.sharedSegmentWriter?.seal();
    for (let i = 0; i < this.numberOfSubpartitions; i++) this.finishUnicastBuilder(i);
  }

  private finishBroadcastBuilder(): void {
    const builder = this.broadcastBuilder;
    if (builder === undefined) return;
    this.counters.numBytesOut += builder.finish() * this.numberOfSubpartitions;
    this.counters.numBuffersOut += this.numberOfSubpartitions;
    builder.close();
    this.broadcastBuilder = undefined;
    for (const subpartition of this.subpartitions) subpartition.onBuilderFinished();
  }

  private finishBuilders(): void {
    this.finishBroadcastBuilder();
    this.finishUnicastBuilders();
  }

  private closeBuilders(): void {
    this.sharedSegmentWriter?.discard();
    for (let i = 0; i < this.numberOfSubpartitions; i++) {
      this.unicastBuilders[i]?.close();
      this.unicastBuilders[i] = undefined;
    }
    this.broadcastBuilder?.close();
    this.broadcastBuilder = undefined;
  }

  // -------------------------------------------------------------------------- reader side

  protected createSubpartitionViewInternal(
    index: number,
    listener: BufferAvailabilityListener,
  ): ResultSubpartitionView {
    return (this.subpartitions[index] as PipelinedSubpartition).createReadView(listener);
  }

  /**
   * A view was released. Before the subpartition was fully read (the consumer went away), its
   * queued data is dropped so the producer's memory comes back and its other consumers keep
   * flowing. Once every subpartition was consumed and the producer closed, the partition is
   * released (pipelined partitions are read once).
   */
  onConsumedSubpartition(index: number): void {
    if (this.released) return;
    const subpartition = this.subpartitions[index] as PipelinedSubpartition;
    if (!subpartition.isReleased()) subpartition.release();
    this.dropUser();
    if (this.numberOfUsers === 1 && !this.producerClosed && !this.finished) {
      // Every consumer went away before the end of the data (cancelled): nothing the producer
      // writes can reach anyone. Release now so it learns (its next emit fails with
      // CancelledError) instead of writing into dropped subpartitions; Flink's producer would
      // sit back-pressured until the scheduler cancels it.
      this.partitionManager.onConsumedPartition(this);
    }
  }

  private dropUser(): void {
    if (this.released) return;
    this.numberOfUsers--;
    if (this.numberOfUsers === 0) this.partitionManager.onConsumedPartition(this);
  }

  getNumberOfQueuedBuffers(subpartition?: number): number {
    if (subpartition !== undefined) {
      return this.subpartitions[subpartition]?.getNumberOfQueuedBuffers() ?? 0;
    }
    let queued = 0;
    for (const subpartition of this.subpartitions)
      queued += subpartition.getNumberOfQueuedBuffers();
    return queued;
  }

  getNumberOfQueuedBytes(): number {
    let bytes = 0;
    for (const subpartition of this.subpartitions) bytes += subpartition.getNumberOfQueuedBytes();
    return bytes;
  }

  getSubpartition(index: number): PipelinedSubpartition {
    const subpartition = this.subpartitions[index];
    if (subpartition === undefined) throw new IllegalArgumentError(`no subpartition ${index}`);
    return subpartition;
  }
}
