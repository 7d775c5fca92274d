import {
  CancelCheckpointMarker,
  CheckpointAlignment,
  CheckpointBarrier,
  DEFAULT_CHECKPOINT_OPTIONS,
  type ExecutionAttemptID,
  type JobID,
} from "@sluice/core";
import type { RecordWriter } from "../io/record-writer.js";
import { serializeThrowable } from "../taskexecutor/serialized-throwable.js";
import type { AcknowledgeCheckpoint } from "./acknowledge-checkpoint.js";
import { CheckpointError } from "./checkpoint-error.js";
import { CheckpointFailureReason } from "./checkpoint-failure-reason.js";
import type { CheckpointHandler } from "./checkpoint-handler.js";
import {
  type CheckpointMetrics,
  NO_CHECKPOINT_METRICS,
  type TaskCheckpointMetrics,
} from "./checkpoint-metrics.js";
import type { CheckpointableTask } from "./checkpointable-task.js";
import { CheckpointingMode } from "./checkpointing-mode.js";
import type { DeclineCheckpoint } from "./decline-checkpoint.js";
import type { FileStateHandle } from "./fs-checkpoint-storage.js";

/** What a task's checkpoint coordinator needs from its TaskExecutor. */
export interface SubtaskCheckpointCoordinatorOptions {
  readonly jobId: JobID;
  readonly executionAttemptId: ExecutionAttemptID;
  /** The task's name, for messages. */
  readonly taskName: string;
  /** The job's checkpointing mode: the alignment of the barriers a source sends. */
  readonly mode: CheckpointingMode;
  /** Writes a snapshot (already serialized) and returns where it is. */
  readonly persist: (checkpointId: bigint, stateJson: string) => Promise<FileStateHandle>;
  /** Deletes a written snapshot that will never be acknowledged. */
  readonly discard: (handle: FileStateHandle) => Promise<void>;
  /** Sends an acknowledgement to the job side. Must not throw. */
  readonly acknowledge: (ack: AcknowledgeCheckpoint) => void;
  /** Sends a decline to the job side. Must not throw. */
  readonly decline: (decline: DeclineCheckpoint) => void;
}

/** A task's figures of its last checkpoint (what it acknowledged). */
export interface TaskCheckpointStats {
  /** The checkpoint. */
  readonly checkpointId: bigint;
  /** The alignment figures and the snapshot's durations. */
  readonly metrics: TaskCheckpointMetrics;
  /** Bytes of the snapshot file (0 without state). */
  readonly stateSize: number;
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
 * every output is available, as Flink's mailbox does.
 */
export class SubtaskCheckpointCoordinator implements CheckpointableTask {
  private readonly options: SubtaskCheckpointCoordinatorOptions;
  private readonly pending = new Set<Promise<void>>();
  private outputs: readonly RecordWriter<unknown>[] = [];
  private handler: CheckpointHandler | undefined;
  private last: TaskCheckpointStats | undefined;
  /** Set when the task failed or was canceled: snapshots still being written are discarded. */
  private discarding = false;

  constructor(options: SubtaskCheckpointCoordinatorOptions) {
    this.options = options;
  }

  /** The writers barriers and markers go to (set when the task starts running). */
  setOutputs(outputs: readonly RecordWriter<unknown>[]): void {
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
   * A source's trigger (from the job side, run as mail): performs checkpoint `checkpointId`
   * with a barrier of the job's mode, created at `timestamp` (ms since the epoch).
   */
  triggerCheckpoint(checkpointId: bigint, timestamp: bigint): void {
    const alignment =
      this.options.mode === CheckpointingMode.EXACTLY_ONCE
        ? CheckpointAlignment.ALIGNED
        : CheckpointAlignment.AT_LEAST_ONCE;
    const options = { ...DEFAULT_CHECKPOINT_OPTIONS, alignment };
    this.performCheckpoint(new CheckpointBarrier(checkpointId, timestamp, options), {
      ...NO_CHECKPOINT_METRICS,
    });
  }

  triggerCheckpointOnBarrier(barrier: CheckpointBarrier, metrics: CheckpointMetrics): void {
    this.performCheckpoint(barrier, metrics);
  }

  abortCheckpointOnBarrier(checkpointId: bigint, reason: CheckpointFailureReason): void {
    this.abortCheckpoint(checkpointId, reason);
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
  }

  private performCheckpoint(barrier: CheckpointBarrier, metrics: CheckpointMetrics): void {
    const checkpointId = barrier.id;
    const start = performance.now();
    let stateJson: string | undefined;
    try {
      stateJson = this.takeSnapshot(checkpointId);
    } catch (error) {
      // Downstream tasks must not wait for a barrier that will never come.
      this.abortCheckpoint(
        checkpointId,
        CheckpointFailureReason.CHECKPOINT_DECLINED,
        error as Error,
      );
      return;
    }
    for (const output of this.outputs) output.broadcastEvent(barrier);
    const syncDurationMillis = Math.round(performance.now() - start);
    const written = this.writeAndAcknowledge(checkpointId, stateJson, metrics, syncDurationMillis);
    this.pending.add(written);
    void written.then(() => this.pending.delete(written));
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

  private async writeAndAcknowledge(
    checkpointId: bigint,
    stateJson: string | undefined,
    alignment: CheckpointMetrics,
    syncDurationMillis: number,
  ): Promise<void> {
    const start = performance.now();
    let stateHandle: FileStateHandle | undefined;
    try {
      if (stateJson !== undefined)
        stateHandle = await this.options.persist(checkpointId, stateJson);
    } catch (error) {
      this.decline(
        checkpointId,
        CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION,
        error as Error,
      );
      return;
    }
    if (this.discarding) {
      if (stateHandle !== undefined) await this.discardQuietly(stateHandle);
      return;
    }
    const metrics: TaskCheckpointMetrics = {
      alignmentDurationNanos: alignment.alignmentDurationNanos,
      bytesProcessedDuringAlignment: alignment.bytesProcessedDuringAlignment,
      checkpointStartDelayNanos: alignment.checkpointStartDelayNanos,
      syncDurationMillis,
      asyncDurationMillis: Math.round(performance.now() - start),
    };
    this.last = { checkpointId, metrics, stateSize: stateHandle?.size ?? 0 };
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
      process.emitWarning(
        `${this.options.taskName}: could not delete the discarded snapshot ${handle.path}: ${(error as Error).message}`,
        { type: "SluiceCheckpointWarning" },
      );
    }
  }

  private abortCheckpoint(
    checkpointId: bigint,
    reason: CheckpointFailureReason,
    error?: Error,
  ): void {
    for (const output of this.outputs)
      output.broadcastEvent(new CancelCheckpointMarker(checkpointId));
    this.decline(checkpointId, reason, error);
  }
}
