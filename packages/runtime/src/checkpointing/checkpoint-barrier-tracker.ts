import {
  type CancelCheckpointMarker,
  type CheckpointBarrier,
  IllegalStateError,
  needsAlignment,
} from "@sluice/core";
import type { InputChannelInfo } from "@sluice/runtime-api";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import {
  CheckpointBarrierHandler,
  type CheckpointBarrierHandlerOptions,
} from "./checkpoint-barrier-handler.js";

/** The barriers seen so far of one checkpoint that is not complete yet. */
class CheckpointBarrierCount {
  readonly alignedChannels = new Set<number>();
  aborted = false;

  constructor(
    readonly checkpointId: bigint,
    /** Undefined for a checkpoint first seen through a cancellation marker. */
    readonly barrier: CheckpointBarrier | undefined,
    readonly targetChannelCount: number,
    firstChannel: number,
  ) {
    this.alignedChannels.add(firstChannel);
  }

  /** Counts `key`; returns how many channels are now aligned. */
  markChannelAligned(key: number): number {
    this.alignedChannels.add(key);
    return this.alignedChannels.size;
  }

  /** Returns true the first time only. */
  markAborted(): boolean {
    const first = !this.aborted;
    this.aborted = true;
    return first;
  }
}

/**
 * At-least-once barrier tracking over all input channels of a task (Flink's
 * CheckpointBarrierTracker): never blocks a channel, so records after a barrier may be processed
 * before the checkpoint triggers and are replayed after a restore. It tracks several checkpoints
 * at once (at most {@link MAX_CHECKPOINTS_TO_TRACK}), assuming newer checkpoints have higher ids:
 *
 * - A checkpoint triggers when every channel open at its first barrier delivered its barrier (or
 *   ended); older incomplete checkpoints are then dropped without notice (subsumed). A later
 *   checkpoint's barriers do not cancel an earlier one.
 * - A barrier of a checkpoint older than the newest one seen, and not tracked, is ignored.
 * - A cancellation marker aborts its checkpoint and every older tracked one (each notified
 *   once); the aborted checkpoint stays tracked until all channels delivered its barrier or
 *   marker, so its late barriers do not restart it.
 * - A channel that ends counts as aligned for every tracked checkpoint; the newest one that it
 *   completes triggers (unless aborted). With `checkpointsAfterTasksFinish` off, it aborts all.
 * - With one open channel, a barrier or marker newer than everything tracked takes effect at
 *   once.
 *
 * Barriers must be at-least-once ones: an aligned barrier blocks its channel upstream, and the
 * tracker never resumes it.
 */
export class CheckpointBarrierTracker extends CheckpointBarrierHandler {
  /** How many incomplete checkpoints are tracked; the oldest is dropped beyond this. */
  static readonly MAX_CHECKPOINTS_TO_TRACK = 50;

  private numOpenChannels: number;
  private readonly pendingCheckpoints: CheckpointBarrierCount[] = [];
  private latestPendingCheckpointId = -1n;

  constructor(options: CheckpointBarrierHandlerOptions) {
    super(options);
    this.numOpenChannels = this.totalNumberOfInputChannels;
  }

  processBarrier(barrier: CheckpointBarrier, channel: InputChannelInfo): void {
    const key = this.channelKey(channel);
    if (needsAlignment(barrier.options)) {
      throw new IllegalStateError(
        `${this.taskName}: barrier of checkpoint ${barrier.id} on channel ${channel.channelIndex} of gate ${channel.gateIndex} blocks its channel (alignment ${barrier.options.alignment}), but at-least-once tracking never resumes channels; send barriers with CheckpointAlignment.AT_LEAST_ONCE`,
      );
    }
    const id = barrier.id;
    // Only for new checkpoints: one begun while more channels were open still waits for them.
    if (id > this.latestPendingCheckpointId && this.numOpenChannels === 1) {
      this.markAlignmentStartAndEnd(id, barrier.timestamp);
      this.notifyCheckpoint(barrier);
      return;
    }
    const pos = this.pendingCheckpoints.findIndex((count) => count.checkpointId === id);
    if (pos >= 0) {
      const count = this.pendingCheckpoints[pos] as CheckpointBarrierCount;
      if (count.markChannelAligned(key) === count.targetChannelCount) {
        // This one and all older ones are done: older ones can no longer complete usefully.
        this.pendingCheckpoints.splice(0, pos + 1);
        if (!count.aborted) this.triggerOnAligned(count);
      }
    } else if (id > this.latestPendingCheckpointId) {
      this.markAlignmentStart(id, barrier.timestamp);
      this.latestPendingCheckpointId = id;
      this.pendingCheckpoints.push(
        new CheckpointBarrierCount(id, barrier, this.numOpenChannels, key),
      );
      if (this.pendingCheckpoints.length > CheckpointBarrierTracker.MAX_CHECKPOINTS_TO_TRACK) {
        this.pendingCheckpoints.shift();
      }
    }
  }

  processCancellationBarrier(marker: CancelCheckpointMarker, channel: InputChannelInfo): void {
    const key = this.channelKey(channel);
    const id = marker.checkpointId;
    const reason = CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER;
    if (id > this.latestPendingCheckpointId && this.numOpenChannels === 1) {
      this.resetAlignment();
      this.notifyAbort(id, reason);
      return;
    }
    let first = this.pendingCheckpoints[0];
    while (first !== undefined && first.checkpointId < id) {
      this.pendingCheckpoints.shift();
      if (first.markAborted()) this.notifyAbort(first.checkpointId, reason);
      first = this.pendingCheckpoints[0];
    }
    if (first !== undefined && first.checkpointId === id) {
      if (first.markAborted()) this.notifyAbort(id, reason);
      // Still counted, so the entry goes once every channel delivered its barrier or marker.
      if (first.markChannelAligned(key) === first.targetChannelCount) {
        this.pendingCheckpoints.shift();
      }
    } else if (id > this.latestPendingCheckpointId) {
      this.notifyAbort(id, reason);
      this.latestPendingCheckpointId = id;
      const aborted = new CheckpointBarrierCount(id, undefined, this.numOpenChannels, key);
      aborted.markAborted();
      // Every older entry was removed above, so it goes first and the limit holds.
      this.pendingCheckpoints.unshift(aborted);
    }
    // Otherwise a trailing marker of a checkpoint already aborted or subsumed.
  }

  processEndOfPartition(channel: InputChannelInfo): void {
    const key = this.channelKey(channel);
    this.markChannelFinished(key);
    this.numOpenChannels--;
    if (!this.checkpointsAfterTasksFinish) {
      for (const count of this.pendingCheckpoints.splice(0)) {
        if (count.markAborted()) {
          this.notifyAbort(
            count.checkpointId,
            CheckpointFailureReason.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM,
          );
        }
      }
      this.resetAlignment();
      return;
    }
    // The newest checkpoint that waited only for this channel completes.
    for (let pos = this.pendingCheckpoints.length - 1; pos >= 0; pos--) {
      const count = this.pendingCheckpoints[pos] as CheckpointBarrierCount;
      if (count.markChannelAligned(key) === count.targetChannelCount) {
        this.pendingCheckpoints.splice(0, pos + 1);
        if (!count.aborted) this.triggerOnAligned(count);
        return;
      }
    }
  }

  getLatestCheckpointId(): bigint {
    const last = this.pendingCheckpoints[this.pendingCheckpoints.length - 1];
    return last === undefined ? -1n : last.checkpointId;
  }

  isCheckpointPending(): boolean {
    return this.pendingCheckpoints.length > 0;
  }

  getNumOpenChannels(): number {
    return this.numOpenChannels;
  }

  /** Ids of the tracked incomplete checkpoints, oldest first. */
  getPendingCheckpointIds(): bigint[] {
    return this.pendingCheckpoints.map((count) => count.checkpointId);
  }

  private triggerOnAligned(count: CheckpointBarrierCount): void {
    // Only the newest checkpoint's alignment is timed.
    if (count.checkpointId === this.latestPendingCheckpointId) this.markAlignmentEnd();
    this.notifyCheckpoint(count.barrier as CheckpointBarrier);
  }
}
