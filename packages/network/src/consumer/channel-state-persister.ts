import { EventSerializer, isEventType, type NetworkBuffer } from "@sluice/core";
import type { ChannelStateWriter, InputChannelInfo } from "@sluice/runtime-api";

/**
 * The in-flight input of one channel for unaligned checkpoints (Flink's ChannelStatePersister).
 *
 * When an unaligned checkpoint starts at the task, the channel hands over what it holds before
 * that checkpoint's barrier ({@link startPersisting}). If the barrier has not arrived yet, every
 * data buffer the channel receives from then on is persisted too ({@link maybePersist}), until
 * the barrier arrives ({@link checkForBarrier}) or the checkpoint ends ({@link stopPersisting}).
 *
 * It remembers the barriers the channel received and not yet saw stop, with their sequence
 * numbers, so a channel that already holds the barrier of a later checkpoint still knows where
 * the earlier one is (Flink keeps only the last and aborts the earlier checkpoint instead).
 */
export class ChannelStatePersister {
  private readonly channelInfo: InputChannelInfo;
  private writer: ChannelStateWriter | undefined;
  /** The checkpoint whose barrier this channel still waits for; persisting while set. */
  private pendingCheckpointId: bigint | undefined;
  /** The newest checkpoint that started or stopped here (older barriers are stale). */
  private lastCheckpointId = -1n;
  /** Barriers received (by checkpoint id) with their sequence numbers, until they stop. */
  private readonly receivedBarriers = new Map<bigint, number>();

  constructor(channelInfo: InputChannelInfo, writer?: ChannelStateWriter) {
    this.channelInfo = channelInfo;
    this.writer = writer;
  }

  /** Where the in-flight data goes (set by the gate before the task reads). */
  setWriter(writer: ChannelStateWriter): void {
    this.writer = writer;
  }

  /** Whether a writer is set (without one nothing is persisted). */
  hasWriter(): boolean {
    return this.writer !== undefined;
  }

  /**
   * The sequence number of the barrier of `checkpointId` if this channel received it, so the
   * caller knows which of its queued buffers precede it.
   */
  barrierSequenceNumber(checkpointId: bigint): number | undefined {
    return this.receivedBarriers.get(checkpointId);
  }

  /**
   * Checkpoint `checkpointId` started at the task: `known` (retained data buffers the channel
   * holds before the checkpoint's barrier) go to the writer, and, unless the barrier already
   * arrived, data received from now on is persisted until it does.
   */
  startPersisting(checkpointId: bigint, known: readonly NetworkBuffer[]): void {
    if (checkpointId > this.lastCheckpointId) this.lastCheckpointId = checkpointId;
    if (!this.receivedBarriers.has(checkpointId)) this.pendingCheckpointId = checkpointId;
    if (known.length === 0) return;
    if (this.writer === undefined) {
      for (const buffer of known) buffer.recycleBuffer();
      return;
    }
    this.writer.addInputData(checkpointId, this.channelInfo, known);
  }

  /** Checkpoint `checkpointId` completed or was aborted at the task: stop persisting for it. */
  stopPersisting(checkpointId: bigint): void {
    if (checkpointId > this.lastCheckpointId) this.lastCheckpointId = checkpointId;
    if (this.pendingCheckpointId !== undefined && this.pendingCheckpointId <= checkpointId) {
      this.pendingCheckpointId = undefined;
    }
    for (const id of this.receivedBarriers.keys()) {
      if (id <= checkpointId) this.receivedBarriers.delete(id);
    }
  }

  /** Persists `buffer` (a data buffer the channel just received) if a checkpoint waits for it. */
  maybePersist(buffer: NetworkBuffer): void {
    const checkpointId = this.pendingCheckpointId;
    if (checkpointId === undefined || !buffer.isBuffer() || this.writer === undefined) return;
    this.writer.addInputData(checkpointId, this.channelInfo, [buffer.retainBuffer()]);
  }

  /**
   * Looks at an event the channel received (when a writer is set): a barrier of a checkpoint
   * not older than the last one seen is remembered with its sequence number and ends persisting for its checkpoint.
   * Returns the barrier's checkpoint id, or undefined for any other buffer.
   */
  checkForBarrier(buffer: NetworkBuffer, sequenceNumber: number): bigint | undefined {
    // Without a writer there is nothing to persist, and so no reason to decode events here.
    if (this.writer === undefined || !isEventType(buffer.getDataType())) return undefined;
    const event = EventSerializer.fromBuffer(buffer);
    if (event.kind !== "CheckpointBarrier") return undefined;
    const id = event.id;
    // A barrier of a checkpoint that stopped here already is stale (its checkpoint is over).
    if (id < this.lastCheckpointId && !this.receivedBarriers.has(id)) return undefined;
    this.receivedBarriers.set(id, sequenceNumber);
    if (this.pendingCheckpointId !== undefined && id >= this.pendingCheckpointId) {
      this.pendingCheckpointId = undefined;
    }
    return id;
  }

  /** True while data received now would be persisted for a started checkpoint. */
  isPersisting(): boolean {
    return this.pendingCheckpointId !== undefined;
  }
}
