import {
  AvailabilityHelper,
  type CancelCheckpointMarker,
  type CheckpointBarrier,
  IllegalStateError,
  isTimeoutable,
  isUnalignedCheckpoint,
  needsAlignment,
} from "@sluice/core";
import type { InputChannelInfo } from "@sluice/runtime-api";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import {
  CheckpointBarrierHandler,
  type CheckpointBarrierHandlerOptions,
} from "./checkpoint-barrier-handler.js";

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
 * Barriers must be exactly-once ones. Aligned barriers block their subpartition upstream, which
 * is what makes holding a channel possible.
 *
 * Unaligned checkpoints (Flink's unaligned handler states): the first unaligned barrier — a
 * priority event that overtook its channel's data — triggers the checkpoint at once; the task
 * then persists the data still queued before the other channels' barriers as channel state, and
 * is told ({@link CheckpointableTask.allBarriersReceived}) once every open channel delivered its
 * barrier or ended. Nothing is held.
 *
 * Alignment timeout (Flink's alternating handler): a timeoutable aligned barrier is announced
 * ahead of the data by its channel (an EventAnnouncement, {@link processBarrierAnnouncement}).
 * When the alignment takes longer than the barrier's `alignedCheckpointTimeout` from its first
 * barrier or announcement here, the checkpoint turns unaligned: the announced barriers move ahead
 * of their data, the held channels resume and the checkpoint triggers. The timer only marks the
 * timeout; the switch happens in the next poll ({@link checkAlignmentTimeout}), between records.
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
  /** Whether the pending checkpoint is (or turned) unaligned. */
  private pendingUnaligned = false;
  /** Announced timeoutable barriers of the pending checkpoint not read yet: channel → sequence. */
  private readonly announcements = new Map<
    number,
    { channel: InputChannelInfo; sequence: number }
  >();
  private alignmentTimer: NodeJS.Timeout | undefined;
  private alignmentTimedOut = false;
  /** Available while a timed-out alignment waits for the next poll to switch to unaligned. */
  private readonly timeoutAvailability = new AvailabilityHelper();

  constructor(options: CheckpointBarrierHandlerOptions) {
    super(options);
    this.numOpenChannels = this.totalNumberOfInputChannels;
    this.timeoutAvailability.resetUnavailable();
  }

  processBarrier(barrier: CheckpointBarrier, channel: InputChannelInfo): void {
    const key = this.channelKey(channel);
    const blocking = needsAlignment(barrier.options);
    if (!blocking && !isUnalignedCheckpoint(barrier.options)) {
      throw new IllegalStateError(
        `${this.taskName}: barrier of checkpoint ${barrier.id} on channel ${channel.channelIndex} of gate ${channel.gateIndex} is not an exactly-once barrier (alignment ${barrier.options.alignment}); at-least-once barriers go to a CheckpointBarrierTracker`,
      );
    }
    const id = barrier.id;
    if (
      this.currentCheckpointId > id ||
      (this.currentCheckpointId === id && !this.isCheckpointPending())
    ) {
      // Late: nothing waits for this barrier, but an aligned one blocked its channel upstream.
      if (blocking) this.resumeConsumption(channel);
      return;
    }
    const isNew = this.currentCheckpointId < id;
    this.checkNewCheckpoint(barrier);
    if (isNew && isTimeoutable(barrier.options)) this.registerAlignmentTimer(barrier);
    this.announcements.delete(key);
    if (!this.pendingUnaligned && !blocking) {
      // An unaligned barrier (or one that turned unaligned upstream): no more alignment.
      this.switchToUnaligned(key, barrier);
      return;
    }
    if (this.pendingUnaligned) {
      this.markAligned(key, barrier, () => {
        if (blocking) this.resumeConsumption(channel);
        this.notifyAllBarriersReceivedIfComplete(barrier.id);
      });
      return;
    }
    this.markAligned(key, barrier, () => {
      this.blockedChannels.set(key, channel);
      if (this.alignedChannels.size === this.targetChannelCount) this.triggerAndResume(barrier);
    });
  }

  /**
   * Channel `channel` announced a timeoutable aligned barrier that is still queued behind data as
   * its buffer `sequenceNumber` (Flink's `processBarrierAnnouncement`). Once the alignment times
   * out, that barrier is moved ahead of the data; if the checkpoint is unaligned already, at once.
   */
  override processBarrierAnnouncement(
    barrier: CheckpointBarrier,
    sequenceNumber: number,
    channel: InputChannelInfo,
  ): void {
    const key = this.channelKey(channel);
    const id = barrier.id;
    if (
      this.currentCheckpointId > id ||
      (this.currentCheckpointId === id && !this.isCheckpointPending())
    ) {
      return; // the checkpoint is over here; its barrier will come as a late one
    }
    const isNew = this.currentCheckpointId < id;
    if (isNew) {
      this.checkNewCheckpoint(barrier);
      if (isTimeoutable(barrier.options)) this.registerAlignmentTimer(barrier);
    }
    if (this.pendingUnaligned) {
      this.convertToPriorityEvent(channel, sequenceNumber);
      return;
    }
    this.announcements.set(key, { channel, sequence: sequenceNumber });
  }

  /** True when a timed-out alignment waits to turn unaligned in the next poll. */
  override hasPendingAlignmentTimeout(): boolean {
    return this.alignmentTimedOut;
  }

  /** Resolves once an alignment timed out (for a task waiting for input meanwhile). */
  override getAlignmentTimeoutFuture(): Promise<void> {
    return this.timeoutAvailability.getAvailableFuture();
  }

  /**
   * Turns a timed-out aligned checkpoint unaligned (Flink's `alignedCheckpointTimeout` state
   * change): called by the input in its poll, between records. Returns whether it switched.
   */
  override checkAlignmentTimeout(): boolean {
    if (!this.alignmentTimedOut) return false;
    this.alignmentTimedOut = false;
    this.timeoutAvailability.resetUnavailable();
    if (!this.isCheckpointPending() || this.pendingUnaligned) return false;
    const barrier = this.pendingCheckpointBarrier as CheckpointBarrier;
    for (const { channel, sequence } of this.announcements.values()) {
      this.convertToPriorityEvent(channel, sequence);
    }
    this.announcements.clear();
    this.pendingUnaligned = true;
    const unaligned = barrier.asUnaligned();
    this.pendingCheckpointBarrier = unaligned;
    this.notifyCheckpoint(unaligned);
    this.resumeBlockedChannels();
    this.notifyAllBarriersReceivedIfComplete(barrier.id);
    return true;
  }

  /** The first unaligned barrier (possibly amid an alignment): trigger now, hold nothing. */
  private switchToUnaligned(key: number, barrier: CheckpointBarrier): void {
    this.pendingUnaligned = true;
    this.clearAlignmentTimer();
    for (const { channel: announced, sequence } of this.announcements.values()) {
      this.convertToPriorityEvent(announced, sequence);
    }
    this.announcements.clear();
    const unaligned = barrier.asUnaligned();
    this.pendingCheckpointBarrier = unaligned;
    this.markAligned(key, barrier, () => {
      this.notifyCheckpoint(unaligned);
      this.resumeBlockedChannels();
      this.notifyAllBarriersReceivedIfComplete(barrier.id);
    });
  }

  private notifyAllBarriersReceivedIfComplete(checkpointId: bigint): void {
    if (this.alignedChannels.size === this.targetChannelCount) {
      this.task.allBarriersReceived?.(checkpointId);
    }
  }

  private convertToPriorityEvent(channel: InputChannelInfo, sequenceNumber: number): void {
    this.getInputs()[channel.gateIndex]?.convertToPriorityEvent?.(
      channel.channelIndex,
      sequenceNumber,
    );
  }

  private registerAlignmentTimer(barrier: CheckpointBarrier): void {
    this.clearAlignmentTimer();
    const timeout = Number(barrier.options.alignedCheckpointTimeout);
    const id = barrier.id;
    this.alignmentTimer = setTimeout(() => {
      this.alignmentTimer = undefined;
      if (this.currentCheckpointId !== id || !this.isCheckpointPending()) return;
      this.alignmentTimedOut = true;
      this.timeoutAvailability.resetAvailable();
    }, timeout);
    this.alignmentTimer.unref?.();
  }

  private clearAlignmentTimer(): void {
    if (this.alignmentTimer !== undefined) clearTimeout(this.alignmentTimer);
    this.alignmentTimer = undefined;
    if (this.alignmentTimedOut) {
      this.alignmentTimedOut = false;
      this.timeoutAvailability.resetUnavailable();
    }
  }

  /** Stops the alignment timer (the task ends). */
  override close(): void {
    this.clearAlignmentTimer();
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
    this.announcements.delete(key);
    this.markAligned(key, barrier, () => {
      if (this.pendingUnaligned) this.notifyAllBarriersReceivedIfComplete(barrier.id);
      else if (this.alignedChannels.size === this.targetChannelCount) {
        this.triggerAndResume(barrier);
      }
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
    this.pendingUnaligned = false;
    this.announcements.clear();
    this.clearAlignmentTimer();
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
      this.clearAlignmentTimer();
      this.announcements.clear();
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
    this.pendingUnaligned = false;
    this.announcements.clear();
    this.clearAlignmentTimer();
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
