import {
  type CancelCheckpointMarker,
  type CheckpointBarrier,
  IllegalStateError,
  needsAlignment,
} from "@sluice/core";
import type { InputChannelInfo } from "@sluice/runtime-api";
import {
  CheckpointBarrierHandler,
  type CheckpointBarrierHandlerOptions,
} from "./checkpoint-barrier-handler.js";
import { CheckpointFailureReason } from "./checkpoint-failure-reason.js";

/**
 * Exactly-once barrier alignment over all input channels of a task (Flink's
 * SingleCheckpointBarrierHandler in aligned mode). It follows one checkpoint at a time:
 *
 * - The first barrier of a newer checkpoint starts it; the handler then waits for the channels
 *   open at that moment. A checkpoint still pending is aborted as subsumed.
 * - Each aligned barrier blocks its channel at the producer; once every awaited channel
 *   delivered the barrier or ended, the task is triggered and all held channels resume.
 * - A barrier of an older checkpoint, or of the current one after it completed or was aborted,
 *   is late: its channel resumes at once and nothing else happens.
 * - A cancellation marker newer than the current checkpoint, or for the current one while it is
 *   pending, aborts that id (the pending alignment is dropped and its channels resume); barriers
 *   of it arriving later are late. Older markers are ignored.
 * - A channel that ends while a checkpoint is pending counts as aligned for it (a channel that
 *   already delivered the barrier is not counted twice); later checkpoints no longer wait for
 *   it. With `checkpointsAfterTasksFinish` off, it aborts the pending checkpoint instead.
 *
 * Barriers must be aligned ones (exactly-once, `CheckpointAlignment.ALIGNED` or forced aligned):
 * only they block their subpartition upstream, which is what makes holding a channel possible.
 */
export class SingleCheckpointBarrierHandler extends CheckpointBarrierHandler {
  private numOpenChannels: number;
  private currentCheckpointId = -1n;
  private lastCancelledOrCompletedCheckpointId = -1n;
  private pendingCheckpointBarrier: CheckpointBarrier | undefined;
  private readonly alignedChannels = new Set<number>();
  private targetChannelCount = 0;
  /** Channels whose aligned barrier holds them, by key, until the checkpoint resolves. */
  private readonly blockedChannels = new Map<number, InputChannelInfo>();

  constructor(options: CheckpointBarrierHandlerOptions) {
    super(options);
    this.numOpenChannels = this.totalNumberOfInputChannels;
  }

  processBarrier(barrier: CheckpointBarrier, channel: InputChannelInfo): void {
    const key = this.channelKey(channel);
    if (!needsAlignment(barrier.options)) {
      throw new IllegalStateError(
        `${this.taskName}: barrier of checkpoint ${barrier.id} on channel ${channel.channelIndex} of gate ${channel.gateIndex} does not block its channel (alignment ${barrier.options.alignment}); exactly-once alignment needs aligned barriers, at-least-once barriers go to a CheckpointBarrierTracker`,
      );
    }
    const id = barrier.id;
    if (
      this.currentCheckpointId > id ||
      (this.currentCheckpointId === id && !this.isCheckpointPending())
    ) {
      // Late: nothing waits for this barrier, but it blocked its channel upstream.
      this.resumeConsumption(channel);
      return;
    }
    this.checkNewCheckpoint(barrier);
    this.markAligned(key, barrier, () => {
      this.blockedChannels.set(key, channel);
      if (this.alignedChannels.size === this.targetChannelCount) this.triggerAndResume(barrier);
    });
  }

  processCancellationBarrier(marker: CancelCheckpointMarker, channel: InputChannelInfo): void {
    this.channelKey(channel);
    const id = marker.checkpointId;
    if (
      id > this.currentCheckpointId ||
      (id === this.currentCheckpointId && this.alignedChannels.size > 0)
    ) {
      this.abort(id, CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER);
    }
  }

  processEndOfPartition(channel: InputChannelInfo): void {
    const key = this.channelKey(channel);
    this.markChannelFinished(key);
    this.numOpenChannels--;
    // An ended channel can no longer be resumed (its resources are gone).
    this.blockedChannels.delete(key);
    if (!this.isCheckpointPending()) return;
    if (!this.checkpointsAfterTasksFinish) {
      this.abort(
        this.currentCheckpointId,
        CheckpointFailureReason.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM,
      );
      return;
    }
    const barrier = this.pendingCheckpointBarrier as CheckpointBarrier;
    this.markAligned(key, barrier, () => {
      if (this.alignedChannels.size === this.targetChannelCount) this.triggerAndResume(barrier);
    });
  }

  getLatestCheckpointId(): bigint {
    return this.currentCheckpointId;
  }

  isCheckpointPending(): boolean {
    return (
      this.currentCheckpointId !== this.lastCancelledOrCompletedCheckpointId &&
      this.currentCheckpointId >= 0n
    );
  }

  getNumOpenChannels(): number {
    return this.numOpenChannels;
  }

  /** The channels currently held by an aligned barrier. */
  getBlockedChannels(): InputChannelInfo[] {
    return [...this.blockedChannels.values()];
  }

  /** A barrier newer than anything seen starts a checkpoint, subsuming a pending one. */
  private checkNewCheckpoint(barrier: CheckpointBarrier): void {
    if (this.currentCheckpointId >= barrier.id) return;
    if (this.isCheckpointPending()) {
      this.abort(this.currentCheckpointId, CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED);
    }
    this.currentCheckpointId = barrier.id;
    this.pendingCheckpointBarrier = barrier;
    this.alignedChannels.clear();
    this.targetChannelCount = this.numOpenChannels;
  }

  /**
   * Counts `key` as aligned for the current checkpoint, keeps the alignment timing, runs
   * `transition` (which triggers when all are aligned) and closes the checkpoint when complete.
   */
  private markAligned(key: number, barrier: CheckpointBarrier, transition: () => void): void {
    this.alignedChannels.add(key);
    if (this.alignedChannels.size === 1) {
      if (this.targetChannelCount === 1) {
        this.markAlignmentStartAndEnd(barrier.id, barrier.timestamp);
      } else {
        this.markAlignmentStart(barrier.id, barrier.timestamp);
      }
    }
    // The end is marked before the trigger, so the task gets the finished duration.
    const complete = this.alignedChannels.size === this.targetChannelCount;
    if (complete && this.targetChannelCount > 1) this.markAlignmentEnd();
    transition();
    if (complete) {
      this.alignedChannels.clear();
      this.lastCancelledOrCompletedCheckpointId = this.currentCheckpointId;
    }
  }

  private triggerAndResume(barrier: CheckpointBarrier): void {
    this.notifyCheckpoint(barrier);
    this.resumeBlockedChannels();
  }

  private abort(checkpointId: bigint, reason: CheckpointFailureReason): void {
    // Raising the current id without aligned channels means late barriers of this id (and of
    // older ones) cannot start a new alignment.
    if (checkpointId > this.currentCheckpointId) this.currentCheckpointId = checkpointId;
    if (checkpointId > this.lastCancelledOrCompletedCheckpointId) {
      this.lastCancelledOrCompletedCheckpointId = checkpointId;
    }
    this.pendingCheckpointBarrier = undefined;
    this.alignedChannels.clear();
    this.targetChannelCount = 0;
    this.resumeBlockedChannels();
    this.resetAlignment();
    this.notifyAbort(checkpointId, reason);
  }

  private resumeBlockedChannels(): void {
    const blocked = [...this.blockedChannels.values()];
    this.blockedChannels.clear();
    for (const channel of blocked) this.resumeConsumption(channel);
  }
}
