import {
  type CancelCheckpointMarker,
  type CheckpointBarrier,
  IllegalArgumentError,
  IllegalStateError,
} from "@sluice/core";
import type { InputChannelInfo } from "@sluice/runtime-api";
import { type Clock, SystemClock } from "../clock/clock.js";
import type { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import { type CheckpointMetrics, NO_CHECKPOINT_METRICS } from "../messages/checkpoint-metrics.js";
import type { CheckpointableInput } from "./checkpointable-input.js";
import type { CheckpointableTask } from "./checkpointable-task.js";

/** A promise that never settles: no alignment timeout will ever come. */
const NEVER: Promise<void> = new Promise<void>(() => {});

/** Construction parameters shared by every barrier handler. */
export interface CheckpointBarrierHandlerOptions {
  /** The task's name, for error messages. */
  readonly taskName: string;
  /**
   * Every input gate of the task, in a fixed order: a channel is named by the position of its
   * gate here ({@link InputChannelInfo.gateIndex}). A task with two inputs lists the gates of
   * both, so one handler aligns across all of them.
   */
  readonly inputs: readonly CheckpointableInput[];
  /** Receives the triggers and aborts. */
  readonly task: CheckpointableTask;
  /** Time source for the alignment metrics; the system clock by default. */
  readonly clock?: Clock;
  /**
   * Flink's `execution.checkpointing.checkpoints-after-tasks-finish.enabled` (default true): a
   * channel that ends counts as aligned for the pending checkpoint(s), so checkpoints continue
   * while some inputs have finished. When false, a channel that ends aborts what is pending.
   */
  readonly checkpointsAfterTasksFinish?: boolean;
}

/**
 * Reacts to the checkpoint events of a task's input channels (Flink's CheckpointBarrierHandler):
 * barriers, cancellation markers and the end of a channel. Subclasses decide when a checkpoint
 * triggers; this base keeps the channel bookkeeping and the alignment metrics Flink reports:
 * the alignment duration, the checkpoint start delay and the bytes processed during alignment.
 *
 * A handler is driven by one or more {@link CheckpointedInputGate}s (one per task input) and is
 * not safe for re-entrant calls from the task's callbacks.
 */
export abstract class CheckpointBarrierHandler {
  /** The task's name, for error messages. */
  readonly taskName: string;
  /** Number of channels over all inputs (open or not). */
  readonly totalNumberOfInputChannels: number;
  protected readonly task: CheckpointableTask;
  protected readonly clock: Clock;
  protected readonly checkpointsAfterTasksFinish: boolean;
  private readonly inputs: readonly CheckpointableInput[];
  /** First flat channel key of each gate. */
  private readonly channelOffsets: number[];
  private readonly finishedChannels = new Set<number>();

  /** Undefined outside an alignment. */
  private startOfAlignmentNanos: number | undefined;
  private startAlignmentCheckpointId = -1n;
  private bytesProcessedDuringAlignment = 0;
  /** The last finished alignment's figures; undefined after a reset (Flink's pending futures). */
  private latestAlignmentDurationNanos: number | undefined;
  private latestBytesProcessedDuringAlignment: number | undefined;
  private latestCheckpointStartDelayNanos = 0;

  protected constructor(options: CheckpointBarrierHandlerOptions) {
    this.taskName = options.taskName;
    this.inputs = options.inputs;
    this.task = options.task;
    this.clock = options.clock ?? SystemClock;
    this.checkpointsAfterTasksFinish = options.checkpointsAfterTasksFinish ?? true;
    this.channelOffsets = [];
    let total = 0;
    for (const input of options.inputs) {
      this.channelOffsets.push(total);
      total += input.numberOfInputChannels;
    }
    this.totalNumberOfInputChannels = total;
  }

  /** A barrier arrived on `channel` (in stream order with that channel's data). */
  abstract processBarrier(barrier: CheckpointBarrier, channel: InputChannelInfo): void;

  /** A cancellation marker arrived on `channel`: some upstream task declined a checkpoint. */
  abstract processCancellationBarrier(
    marker: CancelCheckpointMarker,
    channel: InputChannelInfo,
  ): void;

  /** `channel` delivered EndOfPartition: it will deliver no barrier any more. */
  abstract processEndOfPartition(channel: InputChannelInfo): void;

  /**
   * Channel `channel` announced a barrier still queued behind data as its buffer
   * `sequenceNumber` (an EventAnnouncement). Only handlers that can time out an alignment act on
   * it; the default ignores it.
   */
  processBarrierAnnouncement(
    _barrier: CheckpointBarrier,
    _sequenceNumber: number,
    _channel: InputChannelInfo,
  ): void {}

  /** True when a timed-out alignment waits for the next poll ({@link checkAlignmentTimeout}). */
  hasPendingAlignmentTimeout(): boolean {
    return false;
  }

  /** Resolves once an alignment timed out; never for handlers without alignment timeouts. */
  getAlignmentTimeoutFuture(): Promise<void> {
    return NEVER;
  }

  /** Acts on a timed-out alignment, between records; returns whether anything happened. */
  checkAlignmentTimeout(): boolean {
    return false;
  }

  /** Releases the handler's timers (the task ends). Idempotent. */
  close(): void {}

  /** The newest checkpoint id this handler has seen (started, completed or aborted), or -1. */
  abstract getLatestCheckpointId(): bigint;

  /** True while a checkpoint has some but not all of its barriers. */
  abstract isCheckpointPending(): boolean;

  /** The gates this handler aligns over, in the order of {@link InputChannelInfo.gateIndex}. */
  getInputs(): readonly CheckpointableInput[] {
    return this.inputs;
  }

  /**
   * Counts the bytes of a data buffer the task is about to process; they count towards
   * {@link getBytesProcessedDuringAlignment} while an alignment is in progress.
   */
  addProcessedBytes(bytes: number): void {
    if (this.startOfAlignmentNanos !== undefined) this.bytesProcessedDuringAlignment += bytes;
  }

  /**
   * Nanoseconds the current alignment has taken so far, or else the duration of the last
   * completed alignment (0 when the last one was aborted or there was none): Flink's
   * `checkpointAlignmentTime`.
   */
  getAlignmentDurationNanos(): number {
    const start = this.startOfAlignmentNanos;
    if (start !== undefined) return this.clock.relativeTimeNanos() - start;
    return this.latestAlignmentDurationNanos ?? 0;
  }

  /**
   * Nanoseconds from the creation of the newest started checkpoint to the arrival of its first
   * barrier here (Flink's `checkpointStartDelayNanos`).
   */
  getCheckpointStartDelayNanos(): number {
    return this.latestCheckpointStartDelayNanos;
  }

  /**
   * Bytes processed in the current alignment so far, or else in the last completed alignment (0
   * when the last one was aborted or there was none).
   */
  getBytesProcessedDuringAlignment(): number {
    if (this.startOfAlignmentNanos !== undefined) return this.bytesProcessedDuringAlignment;
    return this.latestBytesProcessedDuringAlignment ?? 0;
  }

  /** Number of channels that have not ended. */
  abstract getNumOpenChannels(): number;

  // ------------------------------------------------------------------ for the subclasses

  /**
   * A flat key for `channel`, unique over all inputs. Throws when the channel does not exist or
   * already ended (an event after EndOfPartition means a broken input, not a checkpoint rule).
   */
  protected channelKey(channel: InputChannelInfo): number {
    const input = this.inputs[channel.gateIndex];
    if (
      input === undefined ||
      !Number.isInteger(channel.channelIndex) ||
      channel.channelIndex < 0 ||
      channel.channelIndex >= input.numberOfInputChannels
    ) {
      throw new IllegalArgumentError(
        `${this.taskName}: no input channel ${channel.channelIndex} in gate ${channel.gateIndex}`,
      );
    }
    const key = (this.channelOffsets[channel.gateIndex] as number) + channel.channelIndex;
    if (this.finishedChannels.has(key)) {
      throw new IllegalStateError(
        `${this.taskName}: channel ${channel.channelIndex} of gate ${channel.gateIndex} delivered an event after its EndOfPartition`,
      );
    }
    return key;
  }

  /** Remembers that `key` ended, so later events of it are rejected. */
  protected markChannelFinished(key: number): void {
    this.finishedChannels.add(key);
  }

  /** Lets a channel held by its aligned barrier continue (ResumeConsumption upstream). */
  protected resumeConsumption(channel: InputChannelInfo): void {
    (this.inputs[channel.gateIndex] as CheckpointableInput).resumeConsumption(channel.channelIndex);
  }

  protected notifyCheckpoint(barrier: CheckpointBarrier): void {
    const metrics: CheckpointMetrics =
      barrier.id === this.startAlignmentCheckpointId
        ? {
            alignmentDurationNanos:
              this.latestAlignmentDurationNanos ?? this.getAlignmentDurationNanos(),
            bytesProcessedDuringAlignment:
              this.latestBytesProcessedDuringAlignment ?? this.bytesProcessedDuringAlignment,
            checkpointStartDelayNanos: this.latestCheckpointStartDelayNanos,
          }
        : NO_CHECKPOINT_METRICS;
    this.task.triggerCheckpointOnBarrier(barrier, metrics);
  }

  protected notifyAbort(checkpointId: bigint, reason: CheckpointFailureReason): void {
    this.task.abortCheckpointOnBarrier(checkpointId, reason);
  }

  /** The first barrier of checkpoint `checkpointId` arrived and the task has one open channel. */
  protected markAlignmentStartAndEnd(checkpointId: bigint, createdAtMillis: bigint): void {
    this.markAlignmentStart(checkpointId, createdAtMillis);
    this.markAlignmentEnd(0);
  }

  /** The first barrier of checkpoint `checkpointId` arrived: the alignment starts now. */
  protected markAlignmentStart(checkpointId: bigint, createdAtMillis: bigint): void {
    const delayMillis = this.clock.absoluteTimeMillis() - Number(createdAtMillis);
    this.latestCheckpointStartDelayNanos = 1_000_000 * Math.max(0, delayMillis);
    this.resetAlignment();
    this.startOfAlignmentNanos = this.clock.relativeTimeNanos();
    this.startAlignmentCheckpointId = checkpointId;
  }

  /**
   * The alignment ended after `durationNanos` (by default: now). As with Flink's completed
   * futures, the first end since the last start wins.
   */
  protected markAlignmentEnd(durationNanos?: number): void {
    const duration =
      durationNanos ??
      (this.startOfAlignmentNanos === undefined
        ? 0
        : this.clock.relativeTimeNanos() - this.startOfAlignmentNanos);
    this.latestAlignmentDurationNanos ??= duration;
    this.latestBytesProcessedDuringAlignment ??= this.bytesProcessedDuringAlignment;
    this.startOfAlignmentNanos = undefined;
    this.bytesProcessedDuringAlignment = 0;
  }

  /** The alignment was abandoned: no figures for it. */
  protected resetAlignment(): void {
    this.markAlignmentEnd(0);
    this.latestAlignmentDurationNanos = undefined;
    this.latestBytesProcessedDuringAlignment = undefined;
  }
}
