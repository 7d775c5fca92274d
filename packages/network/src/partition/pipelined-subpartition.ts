import {
  type BufferConsumer,
  CancelledError,
  type CheckpointBarrier,
  DataType,
  deferred,
  EventSerializer,
  hasPriority,
  IllegalStateError,
  isBlockingUpstream,
  type NetworkBuffer,
} from "@sluice/core";
import type { ChannelStateWriter } from "@sluice/runtime-api";
import type { BufferAndBacklog } from "./buffer-and-backlog.js";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import { PipelinedSubpartitionView } from "./pipelined-subpartition-view.js";
import type { AvailabilityWithBacklog } from "./result-subpartition-view.js";
import { nextSequenceNumber } from "./sequence-number.js";

/** What a subpartition reports to its parent partition. */
export interface SubpartitionParent {
  /** A name for messages: the partition id and task. */
  readonly description: string;
  /** The view of subpartition `index` was released: it counts as consumed. */
  onConsumedSubpartition(index: number): void;
  /** The consumer of subpartition `index` processed every record (it read the EndOfData). */
  onSubpartitionAllDataProcessed?(index: number): void;
  /** Why the partition was released, when it failed. */
  getFailureCause(): Error | undefined;
  /** The partition's position among its task's outputs (names it in channel state). */
  readonly partitionIndex?: number;
  /** Where the data an unaligned barrier overtakes goes; undefined: nowhere. */
  getChannelStateWriter?(): ChannelStateWriter | undefined;
  /**
   * The timeoutable barrier of `checkpointId` left this subpartition (sent aligned, turned
   * unaligned, dropped on abort or release): the partition's timer may no longer be needed.
   */
  onTimeoutableBarrierDone?(checkpointId: bigint): void;
}

/** A timeoutable aligned barrier waiting in the queue (Flink's output-side alignment timeout). */
interface QueuedTimeoutableBarrier {
  readonly barrier: CheckpointBarrier;
  /** The queued consumer of the barrier (found again by identity). */
  readonly consumer: BufferConsumer;
  /** Settles the channel state writer's output data of this subpartition for the checkpoint. */
  readonly settle: (data: readonly NetworkBuffer[] | Error) => void;
}

/**
 * The queue of one subpartition of a pipelined result partition (Flink's PipelinedSubpartition).
 *
 * It holds BufferConsumers, not buffers: a new BufferBuilder's consumer is queued as soon as the
 * builder is requested, and the reader takes whatever was committed. The reader is told about data
 * when the first *finished* buffer is queued, on `flush()` when the single unfinished buffer holds
 * data, and on events — never for one unfinished buffer alone, so a partly filled buffer does not
 * wake the consumer for every record. The backlog counts finished data buffers only.
 */
export class PipelinedSubpartition {
  readonly subpartitionIndex: number;
  private readonly parent: SubpartitionParent;
  private readonly buffers: BufferConsumer[] = [];
  private numPriorityElements = 0;
  /** Data consumers queued and not yet fully taken. */
  private buffersInBacklog = 0;
  private readView: PipelinedSubpartitionView | undefined;
  private finished = false;
  private released = false;
  private flushRequested = false;
  /** Set after an aligned barrier was taken; cleared by resumeConsumption. */
  private blocked = false;
  /** The next buffer's sequence number (an int32 that wraps, as Flink's int). */
  private sequenceNumber: number;
  private totalBuffers = 0;
  private totalBytes = 0;
  /** Buffer debloating: the size the next builder should be trimmed to. */
  private bufferSize = Number.MAX_SAFE_INTEGER;
  private readonly minBufferSize: number;
  /** Timeoutable aligned barriers still queued, by checkpoint. */
  private readonly timeoutableBarriers = new Map<bigint, QueuedTimeoutableBarrier>();

  /**
   * @param minBufferSize the smallest size a consumer may ask for with NewBufferSize
   *   (`taskmanager.memory.min-segment-size`)
   * @param initialSequenceNumber the sequence number of the first buffer handed out: 0, as in
   *   Flink, unless a test starts near the int32 wrap-around
   */
  constructor(
    index: number,
    parent: SubpartitionParent,
    minBufferSize = 1,
    initialSequenceNumber = 0,
  ) {
    this.subpartitionIndex = index;
    this.parent = parent;
    this.minBufferSize = minBufferSize;
    this.sequenceNumber = initialSequenceNumber | 0;
  }

  /**
   * Queues `consumer`. Returns false (and closes the consumer) when the subpartition is finished
   * or released — nothing is accepted after finish.
   *
   * @param unalignedCheckpointId set when `consumer` is the barrier of this unaligned
   *   checkpoint: the data buffers it overtakes go to the partition's channel state writer as
   *   this subpartition's output state, before any reader can take them.
   */
  add(
    consumer: BufferConsumer,
    partialRecordLength = 0,
    finish = false,
    unalignedCheckpointId?: bigint,
  ): boolean {
    if (this.finished || this.released) {
      consumer.close();
      return false;
    }
    consumer.partialRecordLength = partialRecordLength;
    const priority = hasPriority(consumer.getDataType());
    if (priority) {
      // Priority events overtake queued data but keep their order among themselves.
      this.buffers.splice(this.numPriorityElements, 0, consumer);
      this.numPriorityElements++;
    } else {
      this.buffers.push(consumer);
    }
    this.totalBuffers++;
    if (consumer.isBuffer()) this.buffersInBacklog++;
    if (finish) this.finished = true;
    if (priority && unalignedCheckpointId !== undefined) {
      this.persistOvertakenData(unalignedCheckpointId, this.buffers.length);
    }
    // As in Flink, only the first pending priority event is announced (a reader told once takes
    // them all before any data), and none while blocked: a blocked subpartition hands out
    // nothing until resumed, so a reader told of priority would find no event to take, and a
    // gate that serves priority channels first would hand out another channel's data instead.
    const notifyPriority = priority && this.numPriorityElements === 1 && !this.blocked;
    if (notifyPriority) {
      this.readView?.notifyPriorityEvent(this.sequenceNumber);
    }
    if (finish || notifyPriority || this.shouldNotifyDataAvailable()) this.notifyDataAvailable();
    return true;
  }

  /**
   * Hands copies of the data behind the priority events up to queue index `end` (what the newest
   * priority barrier overtook; the head's bytes the reader already took excluded) to the channel
   * state writer (Flink's in-flight output of an unaligned checkpoint).
   */
  private persistOvertakenData(checkpointId: bigint, end: number): void {
    const writer = this.parent.getChannelStateWriter?.();
    if (writer === undefined) return;
    const data = this.copyQueuedData(this.numPriorityElements, end);
    if (data.length > 0) writer.addOutputData(checkpointId, this.subpartitionInfo(), data);
  }

  /** Retained copies of the unread bytes of the data buffers at queue indexes [start, end). */
  private copyQueuedData(start: number, end: number): NetworkBuffer[] {
    const data: NetworkBuffer[] = [];
    for (let i = start; i < end; i++) {
      const consumer = this.buffers[i] as BufferConsumer;
      if (!consumer.isBuffer()) continue;
      const copy = consumer.copy();
      const built = copy.build();
      copy.close();
      if (built.readableBytes() > 0) data.push(built);
      else built.recycleBuffer();
    }
    return data;
  }

  private subpartitionInfo(): { partitionIndex: number; subpartitionIndex: number } {
    return {
      partitionIndex: this.parent.partitionIndex ?? 0,
      subpartitionIndex: this.subpartitionIndex,
    };
  }

  /**
   * Queues `consumer`, the serialized timeoutable aligned `barrier` (FLINK-27251's output side),
   * behind the data as any aligned barrier. Until it is sent, {@link alignedBarrierTimeout} may
   * turn it unaligned; the channel state writer is told now that this subpartition's output of
   * the checkpoint is pending, and learns it once the barrier was sent (nothing) or overtook
   * data (that data). Returns false (and closes the consumer) when nothing is accepted any more.
   */
  addTimeoutableBarrier(consumer: BufferConsumer, barrier: CheckpointBarrier): boolean {
    if (!this.add(consumer)) return false;
    const writer = this.parent.getChannelStateWriter?.();
    let settle: (data: readonly NetworkBuffer[] | Error) => void = recycleIgnored;
    if (writer?.addOutputDataFuture !== undefined) {
      const output = deferred<readonly NetworkBuffer[]>();
      settle = (data) => (data instanceof Error ? output.reject(data) : output.resolve(data));
      writer.addOutputDataFuture(barrier.id, this.subpartitionInfo(), output.promise);
    }
    this.timeoutableBarriers.get(barrier.id)?.settle([]);
    this.timeoutableBarriers.set(barrier.id, { barrier, consumer, settle });
    return true;
  }

  /** Whether the timeoutable barrier of `checkpointId` is still queued here. */
  hasTimeoutableBarrier(checkpointId: bigint): boolean {
    return this.timeoutableBarriers.has(checkpointId);
  }

  /**
   * The alignment timeout of checkpoint `checkpointId` passed while its aligned barrier is still
   * queued (Flink's `PipelinedSubpartition.alignedBarrierTimeout`): the barrier becomes
   * unaligned, moves ahead of the queued data as a priority event, and the data buffers it
   * overtook go to the channel state writer as this subpartition's output of the checkpoint.
   * Nothing happens when the barrier was sent already.
   */
  alignedBarrierTimeout(checkpointId: bigint): void {
    const queued = this.timeoutableBarriers.get(checkpointId);
    if (queued === undefined) return;
    this.timeoutableBarriers.delete(checkpointId);
    const index = this.buffers.indexOf(queued.consumer);
    if (index < 0) {
      queued.settle([]);
      this.parent.onTimeoutableBarrierDone?.(checkpointId);
      return;
    }
    const overtaken = this.copyQueuedData(this.numPriorityElements, index);
    this.buffers.splice(index, 1);
    queued.consumer.close();
    const unaligned = EventSerializer.toBufferConsumer(queued.barrier.asUnaligned(), true);
    this.buffers.splice(this.numPriorityElements, 0, unaligned);
    this.numPriorityElements++;
    if (queued.settle === recycleIgnored) {
      // A writer without output futures takes the data directly (its output may have ended).
      const writer = this.parent.getChannelStateWriter?.();
      if (writer !== undefined && overtaken.length > 0) {
        writer.addOutputData(checkpointId, this.subpartitionInfo(), overtaken);
      } else {
        recycleIgnored(overtaken);
      }
    } else {
      queued.settle(overtaken);
    }
    if (this.numPriorityElements === 1 && !this.blocked) {
      this.readView?.notifyPriorityEvent(this.sequenceNumber);
      this.notifyDataAvailable();
    }
    this.parent.onTimeoutableBarrierDone?.(checkpointId);
  }

  /**
   * Checkpoint `checkpointId` was aborted: its queued barrier stays aligned (the consumer sees
   * it and then the cancellation marker), and no longer times out here.
   */
  abortTimeoutableBarrier(checkpointId: bigint): void {
    const queued = this.timeoutableBarriers.get(checkpointId);
    if (queued === undefined) return;
    this.timeoutableBarriers.delete(checkpointId);
    queued.settle([]);
    this.parent.onTimeoutableBarrierDone?.(checkpointId);
  }

  /** The reader took `consumer`: if it is a queued timeoutable barrier, it was sent aligned. */
  private onTimeoutableBarrierSent(consumer: BufferConsumer): void {
    for (const [checkpointId, queued] of this.timeoutableBarriers) {
      if (queued.consumer !== consumer) continue;
      this.timeoutableBarriers.delete(checkpointId);
      // Sent before the timeout: nothing was overtaken, this subpartition adds no output.
      queued.settle([]);
      this.parent.onTimeoutableBarrierDone?.(checkpointId);
      return;
    }
  }

  /** Queues EndOfPartition (already serialized by the caller) and refuses further adds. */
  finish(endOfPartition: BufferConsumer): void {
    this.add(endOfPartition, 0, true);
  }

  isFinished(): boolean {
    return this.finished;
  }

  isReleased(): boolean {
    return this.released;
  }

  /**
   * Makes the committed bytes of the unfinished buffer available to the reader (buffer timeout
   * or an explicit flush). Notifies only when that buffer holds data and no notification for it
   * is pending.
   */
  flush(): void {
    if (this.buffers.length === 0 || this.flushRequested) return;
    const onlyUnfinishedWithData =
      this.buffers.length === 1 && (this.buffers[0] as BufferConsumer).isDataAvailable();
    const notify = !this.blocked && onlyUnfinishedWithData;
    this.flushRequested = this.buffers.length > 1 || onlyUnfinishedWithData;
    if (notify) this.notifyDataAvailable();
  }

  /**
   * Takes the next buffer for the reader, or `undefined` when nothing is available. Fully read,
   * finished consumers are closed here; their segments return to the pool once the taken buffer
   * is recycled.
   */
  pollBuffer(): BufferAndBacklog | undefined {
    if (this.blocked || this.released) return undefined;
    let buffer: NetworkBuffer | undefined;
    if (this.buffers.length === 0) this.flushRequested = false;
    while (this.buffers.length > 0) {
      const consumer = this.buffers[0] as BufferConsumer;
      const built = consumer.build();
      if (!consumer.isBuilderFinished() && this.buffers.length > 1) {
        built.recycleBuffer();
        throw new IllegalStateError(
          `${this.parent.description}#${this.subpartitionIndex}: an unfinished buffer is queued ahead of others`,
        );
      }
      if (this.buffers.length === 1) this.flushRequested = false;
      if (consumer.isBuilderFinished()) {
        this.buffers.shift();
        if (this.numPriorityElements > 0) this.numPriorityElements--;
        consumer.close();
        if (consumer.isBuffer()) this.buffersInBacklog--;
        else if (
          this.timeoutableBarriers.size > 0 &&
          consumer.getDataType() === DataType.TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER
        ) {
          this.onTimeoutableBarrierSent(consumer);
        }
      }
      if (
        built.readableBytes() > 0 ||
        !built.isBuffer() ||
        (consumer.isBuilderFinished() && this.readView?.receiverHasNoExclusiveBuffers() === true)
      ) {
        // A finished buffer whose bytes were all read before is empty; a receiver without
        // exclusive buffers borrowed a floating buffer for it (it was in the backlog), and only
        // receiving it tells that receiver to give the buffer back. Without it, a gate with one
        // floating buffer could hold it for a channel whose producer has nothing more to send.
        buffer = built;
        break;
      }
      // An empty data slice (nothing committed since the last poll): drop it and look further.
      built.recycleBuffer();
      if (!consumer.isBuilderFinished()) break;
    }
    if (buffer === undefined) return undefined;
    if (isBlockingUpstream(buffer.getDataType())) this.blocked = true;
    this.totalBytes += buffer.getSize();
    return {
      buffer,
      buffersInBacklog: this.getBuffersInBacklog(),
      nextDataType: this.isDataAvailable() ? this.getNextBufferType() : DataType.NONE,
      sequenceNumber: this.takeSequenceNumber(),
    };
  }

  private takeSequenceNumber(): number {
    const taken = this.sequenceNumber;
    this.sequenceNumber = nextSequenceNumber(taken);
    return taken;
  }

  /** Backlog as sent on the wire: finished data buffers, the last unfinished one only if flushed. */
  getBuffersInBacklog(): number {
    if (this.blocked || this.buffers.length === 0) return 0;
    const last = this.buffers[this.buffers.length - 1] as BufferConsumer;
    // A last buffer that a record filled exactly is finished (no open buffer follows it): it
    // counts, or a consumer without credit would never hear of it before the next flush.
    if (this.flushRequested || this.finished || !last.isBuffer() || last.isBuilderFinished()) {
      return this.buffersInBacklog;
    }
    return Math.max(this.buffersInBacklog - 1, 0);
  }

  /** Whether the reader can take something now (a finished buffer or a flushed one). */
  isDataAvailable(): boolean {
    if (this.blocked) return false;
    return this.flushRequested || this.getNumberOfFinishedBuffers() > 0;
  }

  /** See ResultSubpartitionView.getAvailabilityAndBacklog. */
  getAvailabilityAndBacklog(numCreditsAvailable: number): AvailabilityWithBacklog {
    const isAvailable =
      numCreditsAvailable > 0
        ? this.isDataAvailable()
        : !this.blocked && this.buffers.length > 0 && this.isNextEventFinished();
    return { isAvailable, backlog: this.getBuffersInBacklog() };
  }

  private isNextEventFinished(): boolean {
    const head = this.buffers[0] as BufferConsumer;
    return !head.isBuffer() && head.isBuilderFinished();
  }

  private getNextBufferType(): DataType {
    const head = this.buffers[0];
    return head === undefined ? DataType.NONE : head.getDataType();
  }

  /** Finished consumers in the queue; only the last one may be unfinished. */
  private getNumberOfFinishedBuffers(): number {
    const size = this.buffers.length;
    if (size === 1 && (this.buffers[0] as BufferConsumer).isBuilderFinished()) return 1;
    return Math.max(0, size - 1);
  }

  private shouldNotifyDataAvailable(): boolean {
    // Notify only on the transition to exactly one finished buffer: later ones are picked up by
    // the reader that was already woken.
    return (
      this.readView !== undefined &&
      !this.flushRequested &&
      !this.blocked &&
      this.getNumberOfFinishedBuffers() === 1
    );
  }

  /**
   * The partition finished the last builder without queuing a new one (a record filled it
   * exactly, or an event/flush follows): the buffer may be the first finished one.
   */
  onBuilderFinished(): void {
    if (this.shouldNotifyDataAvailable()) this.notifyDataAvailable();
  }

  private notifyDataAvailable(): void {
    this.readView?.notifyDataAvailable();
  }

  /** Unblocks after an aligned barrier; wakes the reader if data is waiting. */
  resumeConsumption(): void {
    if (!this.blocked) return;
    this.blocked = false;
    if (this.isDataAvailable()) this.notifyDataAvailable();
  }

  /** Creates the single read view. A second view is an error (pipelined data is read once). */
  createReadView(listener: BufferAvailabilityListener): PipelinedSubpartitionView {
    if (this.released) {
      throw new IllegalStateError(
        `${this.parent.description}#${this.subpartitionIndex} has been released`,
      );
    }
    if (this.readView !== undefined) {
      throw new IllegalStateError(
        `${this.parent.description}#${this.subpartitionIndex} is already being consumed (one reader per pipelined subpartition)`,
      );
    }
    const view = new PipelinedSubpartitionView(this, listener);
    this.readView = view;
    // Data queued before the reader arrived must not be missed.
    if (this.isDataAvailable() || this.finished) view.notifyDataAvailable();
    return view;
  }

  /** Called by the view when the consumer acknowledged that it processed every record. */
  acknowledgeAllDataProcessed(): void {
    this.parent.onSubpartitionAllDataProcessed?.(this.subpartitionIndex);
  }

  /** Called by the view on release: the subpartition counts as consumed. */
  onConsumedSubpartition(): void {
    this.parent.onConsumedSubpartition(this.subpartitionIndex);
  }

  /** Recycles every queued buffer and wakes the reader so it sees the release. Idempotent. */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const consumer of this.buffers.splice(0)) consumer.close();
    this.buffersInBacklog = 0;
    this.numPriorityElements = 0;
    const barriers = [...this.timeoutableBarriers];
    this.timeoutableBarriers.clear();
    for (const [checkpointId, queued] of barriers) {
      // The barrier can never reach the consumer now: its checkpoint cannot complete.
      queued.settle(
        new CancelledError(
          `${this.parent.description}#${this.subpartitionIndex} was released before the barrier of checkpoint ${checkpointId} was sent`,
        ),
      );
      this.parent.onTimeoutableBarrierDone?.(checkpointId);
    }
    this.readView?.notifyDataAvailable();
  }

  getFailureCause(): Error | undefined {
    return this.parent.getFailureCause();
  }

  getNumberOfQueuedBuffers(): number {
    return this.buffers.length;
  }

  /** Committed bytes of queued data buffers the reader has not taken (in-flight output). */
  getNumberOfQueuedBytes(): number {
    let bytes = 0;
    for (const consumer of this.buffers)
      if (consumer.isBuffer()) bytes += consumer.getUnreadBytes();
    return bytes;
  }

  getTotalNumberOfBuffers(): number {
    return this.totalBuffers;
  }

  getTotalNumberOfBytes(): number {
    return this.totalBytes;
  }

  /** Buffer debloating: the next BufferBuilder of this subpartition is trimmed to this size. */
  bufferSizeHint(): number {
    return this.bufferSize;
  }

  /**
   * A consumer's buffer size (NewBufferSize, from buffer debloating), clamped to the minimum
   * segment size as Flink's debloater clamps it: the size comes off the wire, and one-byte
   * buffers would multiply the per-buffer overhead of this subpartition many times over.
   */
  setBufferSize(size: number): void {
    if (size > 0) this.bufferSize = Math.max(size, this.minBufferSize);
  }

  toString(): string {
    return `PipelinedSubpartition#${this.subpartitionIndex}[queued=${this.buffers.length}, backlog=${this.getBuffersInBacklog()}, finished=${this.finished}, released=${this.released}]`;
  }
}

/** Recycles data nobody takes (the settle of a barrier whose writer has no output futures). */
function recycleIgnored(data: readonly NetworkBuffer[] | Error): void {
  if (data instanceof Error) return;
  for (const buffer of data) buffer.recycleBuffer();
}
