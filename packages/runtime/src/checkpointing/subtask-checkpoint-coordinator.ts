import {
  CancelCheckpointMarker,
  CheckpointAlignment,
  CheckpointBarrier,
  type CheckpointOptions,
  DEFAULT_CHECKPOINT_OPTIONS,
  type ExecutionAttemptID,
  isTimeoutable,
  isUnalignedCheckpoint,
  type JobID,
  type SnapshotType,
} from "@sluice/core";
import type { InputGate } from "@sluice/runtime-api";
import type { AcknowledgeCheckpoint } from "../messages/acknowledge-checkpoint.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import {
  type CheckpointMetrics,
  NO_CHECKPOINT_METRICS,
  type TaskCheckpointMetrics,
} from "../messages/checkpoint-metrics.js";
import {
  CHECKPOINT_TRIGGER,
  type CheckpointTriggerOptions,
  isSavepoint,
} from "../messages/checkpoint-trigger-options.js";
import { CheckpointingMode } from "../messages/checkpointing-mode.js";
import type { DeclineCheckpoint } from "../messages/decline-checkpoint.js";
import type { FileStateHandle } from "../messages/file-state-handle.js";
import { serializeThrowable } from "../messages/serialized-throwable.js";
import type { UnalignedCheckpointsSettings } from "../messages/unaligned-checkpoints-settings.js";
import { ChannelStateWriterImpl } from "./channel-state-writer-impl.js";
import { CheckpointError } from "./checkpoint-error.js";
import type { CheckpointEventEmitter } from "./checkpoint-event-emitter.js";
import type { CheckpointHandler } from "./checkpoint-handler.js";
import { emitCheckpointWarning } from "./checkpoint-warning.js";
import type { CheckpointableTask } from "./checkpointable-task.js";
import {
  channelStateSize,
  EMPTY_CHANNEL_STATE,
  type TaskChannelState,
} from "./task-channel-state.js";

/** What a task's checkpoint coordinator needs from its TaskExecutor. */
export interface SubtaskCheckpointCoordinatorOptions {
  readonly jobId: JobID;
  readonly executionAttemptId: ExecutionAttemptID;
  /** The task's name, for messages. */
  readonly taskName: string;
  /** The job's checkpointing mode: the alignment of the barriers a source sends. */
  readonly mode: CheckpointingMode;
  /**
   * Present when exactly-once checkpoints may be unaligned: a source then sends unaligned (or
   * timeoutable aligned) barriers.
   */
  readonly unaligned?: UnalignedCheckpointsSettings;
  /**
   * Writes a snapshot (the state already serialized, undefined for none; the channel state of
   * an unaligned checkpoint) and returns where it is: into `location`, a savepoint's folder,
   * when the barrier names one.
   */
  readonly persist: (
    checkpointId: bigint,
    stateJson: string | undefined,
    channelState: TaskChannelState,
    location?: string,
  ) => Promise<FileStateHandle>;
  /** Deletes a written snapshot that will never be acknowledged. */
  readonly discard: (handle: FileStateHandle) => Promise<void>;
  /** Sends an acknowledgement to the job side. Must not throw. */
  readonly acknowledge: (ack: AcknowledgeCheckpoint) => void;
  /** Sends a decline to the job side. Must not throw. */
  readonly decline: (decline: DeclineCheckpoint) => void;
  /**
   * How many checkpoints the job side aborted before this task took them are remembered, so
   * that the task skips them when their trigger or barriers come after all (Flink's
   * `maxRecordAbortedCheckpoints`). Default 128, Flink's.
   */
  readonly maxRecordAbortedCheckpoints?: number;
}

/** Flink's default of {@link SubtaskCheckpointCoordinatorOptions.maxRecordAbortedCheckpoints}. */
export const DEFAULT_MAX_RECORD_ABORTED_CHECKPOINTS = 128;

/** A task's figures of its last checkpoint (what it acknowledged). */
export interface TaskCheckpointStats {
  /** The checkpoint. */
  readonly checkpointId: bigint;
  /** The alignment figures and the snapshot's durations. */
  readonly metrics: TaskCheckpointMetrics;
  /** Bytes of the snapshot file (0 without state). */
  readonly stateSize: number;
  /** Bytes of in-flight data stored as channel state (0 for an aligned checkpoint). */
  readonly persistedDataBytes: number;
}

/**
 * A task's side of checkpointing (Flink's SubtaskCheckpointCoordinator): when its barrier
 * handler triggers a checkpoint (or, for a source, when the trigger mail runs) it takes the
 * snapshot synchronously, forwards the barrier on every output, and then writes the snapshot and
 * acknowledges asynchronously; when the handler aborts one, it forwards a cancellation marker and
 * declines. It is the {@link CheckpointableTask} the task's barrier handler reports to.
 *
 * Every output must be able to take an event when a checkpoint is performed (no record waiting
 * for buffers): the task guarantees it by polling its input, and running its mail, only while
 * no output has a record waiting for buffers, as Flink's mailbox does.
 *
 * Unaligned checkpoints (Flink's unaligned SubtaskCheckpointCoordinatorImpl path): at the first
 * barrier the task's {@link channelStateWriter} opens the checkpoint, the readers hand over the
 * partial records they hold and the gates the data queued before the barriers; then the state is
 * snapshotted and the barrier sent as a priority event, whose overtaken output goes to the writer
 * too. The asynchronous part waits until every input channel delivered its barrier (the handler
 * calls {@link allBarriersReceived}) and writes the channel state next to the task's state.
 *
 * Aborts (Flink's SubtaskCheckpointCoordinatorImpl): a checkpoint the job side aborted
 * ({@link notifyCheckpointAborted}) before this task took it is remembered; when its trigger or
 * its barriers come after all, the task takes no snapshot and sends a cancellation marker
 * instead of the barrier, so its consumers stop aligning on it at once. One whose asynchronous
 * part still runs is cancelled: its snapshot is deleted once written and never acknowledged.
 * A trigger or barrier of a checkpoint older than one this task already took or aborted is
 * skipped too (out of order), and declined as subsumed.
 *
 * A timeoutable aligned checkpoint (aligned, with `aligned-checkpoint-timeout`) that this task
 * performed aligned still opens its channel state for the output only: its barrier may wait in
 * a back-pressured output queue past the timeout and turn unaligned there, overtaking the
 * queued data, which the partitions then hand to the writer. The asynchronous part waits until
 * every subpartition sent the barrier or it turned unaligned.
 */
export class SubtaskCheckpointCoordinator implements CheckpointableTask {
  private readonly options: SubtaskCheckpointCoordinatorOptions;
  private readonly pending = new Set<Promise<void>>();
  private outputs: readonly CheckpointEventEmitter[] = [];
  private inputs: readonly InputGate[] = [];
  private prepareInputSnapshot: ((checkpointId: bigint) => void) | undefined;
  /**
   * The asynchronous parts still running, by checkpoint; `cancelled` once the checkpoint was
   * aborted here or by the job side: it then neither acknowledges nor declines.
   */
  private readonly asyncParts = new Map<bigint, { cancelled: boolean }>();
  /**
   * Checkpoints the job side aborted before this task took them, oldest first (Flink's
   * `abortedCheckpointIds`), at most `maxRecordAbortedCheckpoints`.
   */
  private readonly abortedCheckpointIds = new Set<bigint>();
  private readonly maxRecordAbortedCheckpoints: number;
  /** The newest checkpoint recorded in {@link abortedCheckpointIds} (0: none). */
  private maxAbortedCheckpointId = 0n;
  /** The newest checkpoint this task took or aborted on a barrier (-1: none). */
  private lastCheckpointId = -1n;
  /** Where the in-flight data of unaligned checkpoints is collected. */
  readonly channelStateWriter: ChannelStateWriterImpl;
  private handler: CheckpointHandler | undefined;
  private last: TaskCheckpointStats | undefined;
  /** Set when the task failed or was canceled: snapshots still being written are discarded. */
  private discarding = false;
  /**
   * Called once the synchronous part of a checkpoint succeeded (state taken, barrier sent on),
   * with the barrier's snapshot type: how the task learns which checkpoint holds its final
   * state, and which is the savepoint of a stop-with-savepoint.
   */
  onCheckpointPerformed: ((checkpointId: bigint, snapshotType: SnapshotType) => void) | undefined;

  constructor(options: SubtaskCheckpointCoordinatorOptions) {
    this.options = options;
    this.maxRecordAbortedCheckpoints =
      options.maxRecordAbortedCheckpoints ?? DEFAULT_MAX_RECORD_ABORTED_CHECKPOINTS;
    this.channelStateWriter = new ChannelStateWriterImpl(options.taskName);
  }

  /** Whether this job's exactly-once checkpoints may be unaligned. */
  get unalignedCheckpointsEnabled(): boolean {
    return (
      this.options.unaligned !== undefined && this.options.mode === CheckpointingMode.EXACTLY_ONCE
    );
  }

  /**
   * The task's gates (their channels hand over in-flight input at an unaligned checkpoint) and
   * how its readers hand over the partial records they hold, called first (they come before
   * anything still queued in the channels).
   */
  setInputs(
    inputs: readonly InputGate[],
    prepareInputSnapshot?: (checkpointId: bigint) => void,
  ): void {
    this.inputs = inputs;
    this.prepareInputSnapshot = prepareInputSnapshot;
  }

  /**
   * Every open input channel delivered the barrier of unaligned checkpoint `checkpointId`, or
   * ended: its in-flight input is complete (Flink's all-barriers-received future).
   */
  allBarriersReceived(checkpointId: bigint): void {
    this.channelStateWriter.finishInput(checkpointId);
    for (const gate of this.inputs) gate.checkpointStopped?.(checkpointId);
  }

  /** The outputs barriers and markers go to: the task's writers (set when it starts running). */
  setOutputs(outputs: readonly CheckpointEventEmitter[]): void {
    this.outputs = outputs;
  }

  /** Registers the task's state (see {@link CheckpointHandler}); replaces an earlier one. */
  setCheckpointHandler(handler: CheckpointHandler): void {
    this.handler = handler;
  }

  /** The figures of the last checkpoint this task acknowledged. */
  get lastCheckpoint(): TaskCheckpointStats | undefined {
    return this.last;
  }

  /**
   * A trigger from the job side, run as mail, at a source or at a task whose inputs all ended:
   * performs checkpoint `checkpointId` with a barrier of the job's mode, created at `timestamp`
   * (ms since the epoch). A savepoint's barrier (`trigger`) names its type and folder, and is
   * aligned without a timeout, as Flink's `CheckpointOptions.forConfig` makes it: a savepoint
   * holds no in-flight data, so it can be restored at another parallelism.
   */
  triggerCheckpoint(
    checkpointId: bigint,
    timestamp: bigint,
    trigger: CheckpointTriggerOptions = CHECKPOINT_TRIGGER,
  ): void {
    const savepoint = isSavepoint(trigger.snapshotType);
    // A task with inputs is triggered only once they all ended (FLIP-147): nothing is in flight
    // towards it, so its barrier is aligned.
    const unaligned =
      this.unalignedCheckpointsEnabled && this.inputs.length === 0 && !savepoint
        ? this.options.unaligned
        : undefined;
    const timeout = BigInt(unaligned?.alignedCheckpointTimeoutMs ?? 0);
    const alignment =
      this.options.mode !== CheckpointingMode.EXACTLY_ONCE
        ? CheckpointAlignment.AT_LEAST_ONCE
        : unaligned !== undefined && timeout === 0n
          ? CheckpointAlignment.UNALIGNED
          : CheckpointAlignment.ALIGNED;
    const options: CheckpointOptions = {
      ...DEFAULT_CHECKPOINT_OPTIONS,
      snapshotType: trigger.snapshotType,
      targetLocation:
        trigger.targetLocation === undefined ? null : Buffer.from(trigger.targetLocation, "utf8"),
      alignment,
      alignedCheckpointTimeout: unaligned === undefined ? 0n : timeout,
    };
    this.performCheckpoint(new CheckpointBarrier(checkpointId, timestamp, options), {
      ...NO_CHECKPOINT_METRICS,
    });
  }

  triggerCheckpointOnBarrier(barrier: CheckpointBarrier, metrics: CheckpointMetrics): void {
    this.performCheckpoint(barrier, metrics);
  }

  abortCheckpointOnBarrier(checkpointId: bigint, reason: CheckpointFailureReason): void {
    if (checkpointId > this.lastCheckpointId) this.lastCheckpointId = checkpointId;
    // Ids older than it can never be taken any more: no need to remember them.
    for (const id of this.abortedCheckpointIds) {
      if (id >= this.lastCheckpointId) break;
      this.abortedCheckpointIds.delete(id);
    }
    this.abortCheckpoint(checkpointId, reason);
  }

  /**
   * The job side aborted checkpoint `checkpointId` (Flink's `notifyCheckpointAborted`): an
   * asynchronous part still running for it is cancelled (its snapshot deleted once written,
   * never acknowledged); one this task has not taken yet is remembered, so its trigger or
   * barriers are answered with a cancellation marker; its channel state stops collecting.
   */
  notifyCheckpointAborted(checkpointId: bigint): void {
    const running = this.asyncParts.get(checkpointId);
    if (running !== undefined) {
      running.cancelled = true;
    } else if (checkpointId > this.lastCheckpointId) {
      this.abortedCheckpointIds.add(checkpointId);
      if (checkpointId > this.maxAbortedCheckpointId) this.maxAbortedCheckpointId = checkpointId;
      // The oldest go first (Flink's set of limited size).
      for (const id of this.abortedCheckpointIds) {
        if (this.abortedCheckpointIds.size <= this.maxRecordAbortedCheckpoints) break;
        this.abortedCheckpointIds.delete(id);
      }
    }
    this.stopChannelState(checkpointId, "was aborted by the job side");
  }

  /** Checkpoints the job side aborted that this task still remembers (for tests). */
  get numberOfRecordedAbortedCheckpoints(): number {
    return this.abortedCheckpointIds.size;
  }

  /** Tells the job side that this task will not take part in `checkpointId`. */
  decline(checkpointId: bigint, reason: CheckpointFailureReason, error?: Error): void {
    this.options.decline({
      jobId: this.options.jobId,
      executionAttemptId: this.options.executionAttemptId,
      checkpointId,
      reason,
      ...(error === undefined ? {} : { error: serializeThrowable(error) }),
    });
  }

  /** Resolves once every snapshot being written was acknowledged, declined or discarded. */
  async waitForPendingCheckpoints(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /**
   * The task failed or was canceled: snapshots still being written are deleted when written and
   * not acknowledged (the job side aborts their checkpoints when it fails over).
   */
  discardPendingCheckpoints(): void {
    this.discarding = true;
    this.channelStateWriter.close(
      new CheckpointError(`${this.options.taskName} ended before its channel state was complete`),
    );
  }

  /**
   * The task's inputs are closed: no barrier arrives any more, so unaligned checkpoints still
   * waiting for input are declined rather than awaited for ever. One waiting only for timeoutable
   * barriers still queued in the task's output is awaited: they leave or turn unaligned at the
   * latest at the alignment timeout.
   */
  closeChannelState(): void {
    this.channelStateWriter.closeInput(
      new CheckpointError(
        `${this.options.taskName} finished before every barrier of the checkpoint arrived`,
      ),
    );
  }

  private performCheckpoint(barrier: CheckpointBarrier, metrics: CheckpointMetrics): void {
    const checkpointId = barrier.id;
    if (this.lastCheckpointId >= checkpointId) {
      // Out of order: a newer one was taken or aborted here, whose barrier or marker already
      // told the consumers. The job side need not wait for this one until it expires.
      this.stopChannelState(checkpointId, "came after a newer checkpoint");
      this.checkAndClearAbortedStatus(checkpointId);
      this.decline(checkpointId, CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED);
      return;
    }
    this.lastCheckpointId = checkpointId;
    if (this.checkAndClearAbortedStatus(checkpointId)) {
      // Aborted by the job side before it came here: no snapshot, and a marker instead of the
      // barrier, so the consumers do not align on a checkpoint that can never complete.
      for (const output of this.outputs) {
        output.broadcastEvent(new CancelCheckpointMarker(checkpointId));
      }
      this.stopChannelState(checkpointId, "was aborted by the job side");
      return;
    }
    const start = performance.now();
    const unaligned = isUnalignedCheckpoint(barrier.options);
    // Aligned here, but its barrier may still turn unaligned in an output queue.
    const outputMayTurnUnaligned =
      !unaligned && this.unalignedCheckpointsEnabled && isTimeoutable(barrier.options);
    let stateJson: string | undefined;
    let channelState: Promise<TaskChannelState> | undefined;
    let persisted: Promise<void> | undefined;
    try {
      if (unaligned) channelState = this.startChannelState(barrier);
      else if (outputMayTurnUnaligned) channelState = this.startOutputChannelState(checkpointId);
      stateJson = this.takeSnapshot(checkpointId);
      persisted = this.startPersistSnapshot(checkpointId);
    } catch (error) {
      // Downstream tasks must not wait for a barrier that will never come.
      this.abortCheckpoint(
        checkpointId,
        CheckpointFailureReason.CHECKPOINT_DECLINED,
        error as Error,
      );
      return;
    }
    // An unaligned barrier overtakes the queued output; the partitions hand it to the writer.
    for (const output of this.outputs) output.broadcastEvent(barrier, unaligned);
    this.onCheckpointPerformed?.(checkpointId, barrier.options.snapshotType);
    if (unaligned || outputMayTurnUnaligned) {
      // Subpartitions still holding a timeoutable barrier keep the output open until it leaves.
      this.channelStateWriter.finishOutput(checkpointId);
      if (this.inputs.length === 0 || outputMayTurnUnaligned) {
        this.channelStateWriter.finishInput(checkpointId);
      }
    }
    const syncDurationMillis = Math.round(performance.now() - start);
    const part = { cancelled: false };
    this.asyncParts.set(checkpointId, part);
    const written = this.writeAndAcknowledge(
      checkpointId,
      part,
      stateJson,
      channelState,
      persisted,
      metrics,
      syncDurationMillis,
      targetLocationOf(barrier),
    );
    this.pending.add(written);
    void written.then(() => {
      this.pending.delete(written);
      if (this.asyncParts.get(checkpointId) === part) this.asyncParts.delete(checkpointId);
    });
  }

  /**
   * Whether `checkpointId` was aborted by the job side before this task took it (Flink's
   * `checkAndClearAbortedStatus`): remembered, or older than every remembered one by more than
   * the remembered count (forgotten, but surely aborted).
   */
  private checkAndClearAbortedStatus(checkpointId: bigint): boolean {
    return (
      this.abortedCheckpointIds.delete(checkpointId) ||
      checkpointId + BigInt(this.maxRecordAbortedCheckpoints) < this.maxAbortedCheckpointId
    );
  }

  /** Checkpoint `checkpointId`'s channel state, if it collects any, is dropped: it is void. */
  private stopChannelState(checkpointId: bigint, why: string): void {
    if (!this.channelStateWriter.isStarted(checkpointId)) return;
    this.channelStateWriter.abort(
      checkpointId,
      new CheckpointError(`${this.options.taskName}: checkpoint ${checkpointId} ${why}`),
    );
    for (const gate of this.inputs) gate.checkpointStopped?.(checkpointId);
  }

  /**
   * Opens the channel state of unaligned checkpoint `barrier`: first the partial records the
   * readers hold, then what the channels hold before the barrier and receive until it, so each
   * channel's bytes are in stream order.
   */
  private startChannelState(barrier: CheckpointBarrier): Promise<TaskChannelState> {
    this.channelStateWriter.start(barrier.id);
    const result = this.channelStateWriter.getWriteResult(barrier.id);
    this.prepareInputSnapshot?.(barrier.id);
    for (const gate of this.inputs) {
      if (gate.checkpointStarted === undefined) {
        throw new CheckpointError(
          `${this.options.taskName}: an input gate of the shuffle plugin cannot take unaligned checkpoints (no checkpointStarted)`,
        );
      }
      gate.checkpointStarted(barrier);
    }
    return result;
  }

  /**
   * Opens the channel state of aligned checkpoint `checkpointId` for what its timeoutable
   * barriers may overtake in the output queues; the aligned input holds nothing in flight.
   */
  private startOutputChannelState(checkpointId: bigint): Promise<TaskChannelState> {
    this.channelStateWriter.start(checkpointId);
    return this.channelStateWriter.getWriteResult(checkpointId);
  }

  /** The handler's state, serialized now (so later changes of the object do not leak in). */
  private takeSnapshot(checkpointId: bigint): string | undefined {
    const handler = this.handler;
    if (handler === undefined) return undefined;
    let state: unknown;
    let json: string | undefined;
    try {
      state = handler.snapshotState(checkpointId);
      json = state === undefined ? undefined : JSON.stringify(state);
    } catch (error) {
      throw new CheckpointError(
        `${this.options.taskName}: snapshotState of checkpoint ${checkpointId} failed: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (state !== undefined && json === undefined) {
      throw new CheckpointError(
        `${this.options.taskName}: snapshotState of checkpoint ${checkpointId} returned a ${typeof state}, which is not JSON`,
      );
    }
    return json;
  }

  /** Starts the handler's asynchronous part; its rejection is handled where it is awaited. */
  private startPersistSnapshot(checkpointId: bigint): Promise<void> | undefined {
    const persist = this.handler?.persistSnapshot;
    if (persist === undefined) return undefined;
    const started = Promise.resolve()
      .then(() => persist.call(this.handler, checkpointId))
      .then(() => undefined);
    started.catch(() => {});
    return started;
  }

  private async writeAndAcknowledge(
    checkpointId: bigint,
    part: { readonly cancelled: boolean },
    stateJson: string | undefined,
    pendingChannelState: Promise<TaskChannelState> | undefined,
    persisted: Promise<void> | undefined,
    alignment: CheckpointMetrics,
    syncDurationMillis: number,
    location: string | undefined,
  ): Promise<void> {
    const start = performance.now();
    if (persisted !== undefined) {
      try {
        await persisted;
      } catch (error) {
        const cause = new CheckpointError(
          `${this.options.taskName}: persistSnapshot of checkpoint ${checkpointId} failed: ${(error as Error).message}`,
          { cause: error },
        );
        // The channel state still being collected for it is of no use any more.
        if (pendingChannelState !== undefined) await pendingChannelState.catch(() => {});
        if (!this.discarding && !part.cancelled) {
          this.decline(checkpointId, CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION, cause);
        }
        return;
      }
    }
    let channelState = EMPTY_CHANNEL_STATE;
    if (pendingChannelState !== undefined) {
      try {
        channelState = await pendingChannelState;
      } catch (error) {
        // Aborted here (declined already) or by the job side, or the task ended before the
        // input was complete.
        if (!part.cancelled && !this.discarding) {
          this.decline(
            checkpointId,
            CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_CLOSING,
            error as Error,
          );
        }
        return;
      }
    }
    const persistedDataBytes = channelStateSize(channelState);
    let stateHandle: FileStateHandle | undefined;
    try {
      if (stateJson !== undefined || persistedDataBytes > 0) {
        stateHandle = await this.options.persist(checkpointId, stateJson, channelState, location);
      }
    } catch (error) {
      if (!part.cancelled) {
        this.decline(
          checkpointId,
          CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION,
          error as Error,
        );
      }
      return;
    }
    if (this.discarding || part.cancelled) {
      if (stateHandle !== undefined) await this.discardQuietly(stateHandle);
      return;
    }
    const metrics: TaskCheckpointMetrics = {
      alignmentDurationNanos: alignment.alignmentDurationNanos,
      bytesProcessedDuringAlignment: alignment.bytesProcessedDuringAlignment,
      checkpointStartDelayNanos: alignment.checkpointStartDelayNanos,
      syncDurationMillis,
      asyncDurationMillis: Math.round(performance.now() - start),
      persistedDataBytes,
    };
    this.last = {
      checkpointId,
      metrics,
      stateSize: stateHandle?.size ?? 0,
      persistedDataBytes,
    };
    this.options.acknowledge({
      jobId: this.options.jobId,
      executionAttemptId: this.options.executionAttemptId,
      checkpointId,
      metrics,
      ...(stateHandle === undefined ? {} : { stateHandle }),
    });
  }

  /**
   * Deletes a snapshot nobody will acknowledge. A failure is reported as a process warning: the
   * task is ending and the checkpoint is void, so there is no one else to tell, and the file is
   * inside the checkpoint's folder, which the job side deletes with the checkpoint.
   */
  private async discardQuietly(handle: FileStateHandle): Promise<void> {
    try {
      await this.options.discard(handle);
    } catch (error) {
      emitCheckpointWarning(
        `${this.options.taskName}: could not delete the discarded snapshot ${handle.path}: ${(error as Error).message}`,
      );
    }
  }

  private abortCheckpoint(
    checkpointId: bigint,
    reason: CheckpointFailureReason,
    error?: Error,
  ): void {
    // Its asynchronous part, if one runs, must not decline it a second time.
    const running = this.asyncParts.get(checkpointId);
    if (running !== undefined) running.cancelled = true;
    this.stopChannelState(checkpointId, "was aborted");
    for (const output of this.outputs)
      output.broadcastEvent(new CancelCheckpointMarker(checkpointId));
    this.decline(checkpointId, reason, error);
  }
}

/** The folder a savepoint's barrier names (Flink's storage location reference), if any. */
function targetLocationOf(barrier: CheckpointBarrier): string | undefined {
  const bytes = barrier.options.targetLocation;
  return bytes === null ? undefined : Buffer.from(bytes).toString("utf8");
}
