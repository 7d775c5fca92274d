import {
  type BufferConsumer,
  DataType,
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
  /** Why the partition was released, when it failed. */
  getFailureCause(): Error | undefined;
  /** The partition's position among its task's outputs (names it in channel state). */
  readonly partitionIndex?: number;
  /** Where the data an unaligned barrier overtakes goes; undefined: nowhere. */
  getChannelStateWriter?(): ChannelStateWriter | undefined;
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
      this.persistOvertakenData(unalignedCheckpointId);
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
   * Hands copies of the data behind the priority events (what the newest priority barrier
   * overtook; the head's bytes the reader already took excluded) to the channel state writer
   * (Flink's in-flight output of an unaligned checkpoint).
   */
  private persistOvertakenData(checkpointId: bigint): void {
    const writer = this.parent.getChannelStateWriter?.();
    if (writer === undefined) return;
    const data: NetworkBuffer[] = [];
    for (let i = this.numPriorityElements; i < this.buffers.length; i++) {
      const consumer = this.buffers[i] as BufferConsumer;
      if (!consumer.isBuffer()) continue;
      const copy = consumer.copy();
      const built = copy.build();
      copy.close();
      if (built.readableBytes() > 0) data.push(built);
      else built.recycleBuffer();
    }
    if (data.length === 0) return;
    writer.addOutputData(
      checkpointId,
      {
        partitionIndex: this.parent.partitionIndex ?? 0,
        subpartitionIndex: this.subpartitionIndex,
      },
      data,
    );
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
