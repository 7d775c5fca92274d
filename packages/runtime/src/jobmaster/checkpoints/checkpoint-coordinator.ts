import type { ExecutionAttemptID, JobID } from "@sluice/core";
import { CheckpointError } from "../../checkpointing/checkpoint-error.js";
import { emitCheckpointWarning } from "../../checkpointing/checkpoint-warning.js";
import { FsCheckpointStorage } from "../../checkpointing/fs-checkpoint-storage.js";
import type { AcknowledgeCheckpoint } from "../../messages/acknowledge-checkpoint.js";
import {
  CheckpointFailureReason,
  isCountedCheckpointFailure,
} from "../../messages/checkpoint-failure-reason.js";
import type { DeclineCheckpoint } from "../../messages/decline-checkpoint.js";
import { deserializeThrowable } from "../../messages/serialized-throwable.js";
import type { TaskExecutorGateway } from "../../messages/task-executor-gateway.js";
import { asError } from "../../util/as-error.js";
import type { CheckpointCoordinatorConfiguration } from "./checkpoint-coordinator-configuration.js";
import type { CompletedCheckpoint } from "./completed-checkpoint.js";
import { PendingCheckpoint, type TaskToWaitFor } from "./pending-checkpoint.js";

/** A source task a checkpoint is triggered at. */
export interface CheckpointTriggerTarget {
  readonly executionAttemptId: ExecutionAttemptID;
  /** The TaskExecutor the task runs on. */
  readonly gateway: Required<Pick<TaskExecutorGateway, "triggerCheckpoint">>;
  /** The task's name, for messages. */
  readonly name: string;
}

/** A task told when a checkpoint completed or was aborted. */
export interface CheckpointNotificationTarget {
  readonly executionAttemptId: ExecutionAttemptID;
  /** The TaskExecutor the task runs on; a gateway without the methods gets no notifications. */
  readonly gateway: Pick<
    TaskExecutorGateway,
    "notifyCheckpointComplete" | "notifyCheckpointAborted"
  >;
  /** The task's name, for messages. */
  readonly name: string;
}

/**
 * Which tasks a checkpoint is triggered at, waits for and notifies (Flink's CheckpointPlan).
 */
export interface CheckpointPlan {
  /**
   * The running tasks none of whose inputs is still running: the sources, and (with
   * `execution.checkpointing.checkpoints-after-tasks-finish`) the tasks whose producers all
   * finished.
   */
  readonly tasksToTrigger: readonly CheckpointTriggerTarget[];
  /** Every running task of the job (their current attempts). */
  readonly tasksToWaitFor: readonly TaskToWaitFor[];
  /**
   * The tasks told when the checkpoint completed or was aborted (Flink's `tasksToCommitTo`):
   * the running ones. None when left out.
   */
  readonly tasksToCommitTo?: readonly CheckpointNotificationTarget[];
  /**
   * The subtasks that already finished: the checkpoint records them as finished, so a restart
   * from it deploys them finished instead of running them again (FLIP-147). None when left out.
   */
  readonly finishedTasks?: readonly TaskToWaitFor[];
}

/** Why a checkpoint failed, as the coordinator recorded it. */
export interface CheckpointFailure {
  readonly checkpointId: bigint;
  readonly reason: CheckpointFailureReason;
  /** The error a task or the coordinator reported, when there was one. */
  readonly error?: Error;
}

/** What a {@link CheckpointCoordinator} works with. */
export interface CheckpointCoordinatorOptions {
  /** The job. */
  readonly jobId: JobID;
  /** Interval, timeout, mode, retention and folder. */
  readonly configuration: CheckpointCoordinatorConfiguration;
  /**
   * The tasks of the next checkpoint, or why none can start now (e.g. not every task is
   * running): called at every trigger.
   */
  readonly calculateCheckpointPlan: () => CheckpointPlan | string;
  /**
   * More checkpoints failed in a row than `execution.checkpointing.tolerable-failed-checkpoints`
   * allows: the job must fail over with `cause`.
   */
  readonly onTolerableFailuresExceeded: (cause: Error) => void;
  /**
   * Stores a completed checkpoint where a job manager taking over finds it (high availability:
   * a pointer in the completed-checkpoint store), before any task is told that it completed —
   * as Flink adds it to its CompletedCheckpointStore before it sends the notifications. A task
   * commits what a checkpoint holds once told, so a checkpoint a new leader cannot restore must
   * never be notified. A rejection fails the checkpoint (`FINALIZE_CHECKPOINT_FAILURE`).
   */
  readonly storeCompletedCheckpoint?: (checkpoint: CompletedCheckpoint) => Promise<void>;
}

/** The job's final state, which decides whether retained checkpoints are deleted. */
export type CheckpointCoordinatorShutdownStatus = "FINISHED" | "FAILED" | "CANCELED";

interface CompletionWaiter {
  resolve(checkpoint: CompletedCheckpoint): void;
  reject(error: Error): void;
}

/**
 * The job side of checkpointing (Flink's CheckpointCoordinator): every
 * `execution.checkpointing.interval` it triggers a checkpoint at the job's sources (while every
 * task runs and fewer than `max-concurrent-checkpoints` are pending), collects the tasks'
 * acknowledgements, and completes the checkpoint when every task acknowledged — by writing its
 * `_metadata` atomically. It aborts a checkpoint when a task declines it, when it expires
 * (`execution.checkpointing.timeout`), when a task finishes without acknowledging it, or when a
 * newer one completes first (subsumed); an aborted checkpoint's files are deleted. It keeps the
 * newest `state.checkpoints.num-retained` completed checkpoints (a restart restores the newest)
 * and counts completed and aborted ones.
 *
 * Checkpoint ids increase for the life of the job, across restarts, so an acknowledgement of an
 * attempt that was restarted can never be mistaken for one of the new attempt.
 */
export class CheckpointCoordinator {
  /** Where `_metadata` goes and from where aborted checkpoints are deleted. */
  readonly storage: FsCheckpointStorage;
  private readonly options: CheckpointCoordinatorOptions;
  private readonly configuration: CheckpointCoordinatorConfiguration;
  private readonly pendingCheckpoints = new Map<bigint, PendingCheckpoint>();
  private readonly completed: CompletedCheckpoint[] = [];
  /** Completed checkpoints a restore could not read: never restored again. */
  private readonly unusable: CompletedCheckpoint[] = [];
  private readonly waiters = new Map<bigint, CompletionWaiter[]>();
  /** The tasks each pending checkpoint notifies when it completes or is aborted. */
  private readonly commitTargets = new Map<bigint, readonly CheckpointNotificationTarget[]>();
  private readonly fileOperations = new Set<Promise<void>>();
  private readonly finalizations = new Set<Promise<void>>();
  private readonly discardFailures: Error[] = [];
  private nextCheckpointId = 1n;
  private schedulerTimer: NodeJS.Timeout | undefined;
  private completedCount = 0;
  private abortedCount = 0;
  private consecutiveFailures = 0;
  private lastFailure: CheckpointFailure | undefined;
  private latest: CompletedCheckpoint | undefined;
  private shutDown = false;

  constructor(options: CheckpointCoordinatorOptions) {
    this.options = options;
    this.configuration = options.configuration;
    this.storage = new FsCheckpointStorage(
      options.configuration.checkpointsDirectory,
      options.jobId,
    );
  }

  /** Checkpoints that completed (including ones no longer retained). */
  get numberOfCompletedCheckpoints(): number {
    return this.completedCount;
  }

  /** Checkpoints that were triggered and aborted (declined, expired, subsumed, failed over). */
  get numberOfAbortedCheckpoints(): number {
    return this.abortedCount;
  }

  /** Checkpoints triggered and neither completed nor aborted yet. */
  get numberOfPendingCheckpoints(): number {
    return this.pendingCheckpoints.size;
  }

  /**
   * The newest completed checkpoint: what a restart restores. It stays readable after the job
   * ended, even when its files were deleted then (see `externalized-checkpoint-retention`).
   */
  get latestCompletedCheckpoint(): CompletedCheckpoint | undefined {
    return this.latest;
  }

  /**
   * Starts from `checkpoint`, completed by an earlier run of the job (another job manager's): it
   * is the latest completed checkpoint, what the first deployment restores, and the next
   * checkpoint id follows it.
   */
  restoreLatestCheckpoint(checkpoint: CompletedCheckpoint): void {
    this.completed.push(checkpoint);
    this.latest = checkpoint;
    if (this.nextCheckpointId <= checkpoint.checkpointId) {
      this.nextCheckpointId = checkpoint.checkpointId + 1n;
    }
  }

  /** The retained completed checkpoints, oldest first. */
  get completedCheckpoints(): readonly CompletedCheckpoint[] {
    return [...this.completed];
  }

  /** The completed checkpoints that turned out unreadable on a restore, oldest first. */
  get unusableCheckpoints(): readonly CompletedCheckpoint[] {
    return [...this.unusable];
  }

  /**
   * A task could not restore its part of completed checkpoint `checkpointId` (its snapshot is
   * missing, truncated, altered, ...): the checkpoint is no longer retained, so no restart
   * restores it again, and the newest retained one before it becomes the latest (Flink's
   * `CompletedCheckpointStore` falls back the same way). Every call is reported as a process
   * warning with `cause`. Its files are kept until the job's end (they show what broke) and
   * then follow `execution.checkpointing.externalized-checkpoint-retention`.
   *
   * @returns the checkpoint a restart restores now, or undefined when none is left.
   */
  markUnusable(checkpointId: bigint, cause: Error): CompletedCheckpoint | undefined {
    const index = this.completed.findIndex((c) => c.checkpointId === checkpointId);
    if (index >= 0) {
      this.unusable.push(...this.completed.splice(index, 1));
      this.latest = this.completed.at(-1);
    }
    const next = this.latest;
    emitCheckpointWarning(
      `job ${this.options.jobId}: restoring checkpoint ${checkpointId} failed, ${next === undefined ? "and no older retained checkpoint is left" : `falling back to checkpoint ${next.checkpointId}`}: ${cause.message}`,
    );
    return next;
  }

  /** The last checkpoint failure. */
  get lastCheckpointFailure(): CheckpointFailure | undefined {
    return this.lastFailure;
  }

  /** Errors deleting the files of aborted or subsumed checkpoints. */
  get discardErrors(): readonly Error[] {
    return [...this.discardFailures];
  }

  /** Starts the periodic triggers (the first after one interval). Idempotent. */
  startCheckpointScheduler(): void {
    if (this.shutDown || this.schedulerTimer !== undefined) return;
    this.scheduleNextTrigger();
  }

  /** Stops the periodic triggers; pending checkpoints go on. Idempotent. */
  stopCheckpointScheduler(): void {
    clearTimeout(this.schedulerTimer);
    this.schedulerTimer = undefined;
  }

  /**
   * Triggers a checkpoint now (besides the periodic ones). Resolves with it once completed.
   *
   * @throws CheckpointError when it cannot start (not every task runs, too many are pending,
   *   the coordinator is shut down) or when it is aborted; the message names the reason.
   */
  triggerCheckpoint(): Promise<CompletedCheckpoint> {
    const started = this.startCheckpoint();
    if (typeof started === "string") {
      return Promise.reject(new CheckpointError(`no checkpoint was triggered: ${started}`));
    }
    return new Promise((resolve, reject) => {
      const list = this.waiters.get(started.checkpointId) ?? [];
      list.push({ resolve, reject });
      this.waiters.set(started.checkpointId, list);
    });
  }

  /** A task acknowledged a checkpoint (see `JobMasterGateway.acknowledgeCheckpoint`). */
  receiveAcknowledgeMessage(ack: AcknowledgeCheckpoint): void {
    if (!ack.jobId.equals(this.options.jobId)) return;
    const pending = this.pendingCheckpoints.get(ack.checkpointId);
    if (
      ack.stateHandle !== undefined &&
      !this.storage.holds(ack.stateHandle, ack.checkpointId, ack.executionAttemptId)
    ) {
      // Not the file this task's snapshot of this checkpoint is written to (a task manager
      // configured with another state.checkpoints.dir, another task's snapshot, a forged
      // message): never restored from, never deleted. It fails the checkpoint only when it
      // comes from one of the tasks the checkpoint waits for.
      if (
        pending !== undefined &&
        !pending.disposed &&
        pending.isAwaiting(ack.executionAttemptId)
      ) {
        this.abort(
          pending,
          CheckpointFailureReason.CHECKPOINT_DECLINED,
          new CheckpointError(
            `the snapshot of task ${ack.executionAttemptId} is ${ack.stateHandle.path}, not ${this.storage.taskStateFile(ack.checkpointId, ack.executionAttemptId)}, its file in the checkpoint's folder (every process must use the same state.checkpoints.dir)`,
          ),
        );
      }
      return;
    }
    if (pending === undefined || pending.disposed) {
      // Late (the checkpoint was aborted or the attempt restarted): its snapshot is garbage.
      this.discardLateState(ack);
      return;
    }
    const result = pending.acknowledgeTask(ack);
    if (result === "UNKNOWN") {
      // Not one of this checkpoint's attempts; the checkpoint itself may still complete.
      if (ack.stateHandle !== undefined) {
        this.track(this.storage.discardState(ack.stateHandle, false));
      }
      return;
    }
    if (result === "SUCCESS" && pending.isFullyAcknowledged()) {
      this.completePendingCheckpoint(pending);
    }
  }

  /** A task declined a checkpoint (see `JobMasterGateway.declineCheckpoint`): it is aborted. */
  receiveDeclineMessage(decline: DeclineCheckpoint): void {
    if (!decline.jobId.equals(this.options.jobId)) return;
    const pending = this.pendingCheckpoints.get(decline.checkpointId);
    if (pending === undefined || pending.disposed) return;
    const cause = decline.error === undefined ? undefined : deserializeThrowable(decline.error);
    this.abort(pending, decline.reason, cause);
  }

  /**
   * A task finished: the pending checkpoints it has not acknowledged are aborted (a task
   * acknowledges every checkpoint it takes part in before it reports FINISHED).
   */
  taskFinished(executionAttemptId: ExecutionAttemptID): void {
    for (const pending of [...this.pendingCheckpoints.values()]) {
      if (!pending.finalizing && pending.isAwaiting(executionAttemptId)) {
        this.abort(pending, CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_CLOSING);
      }
    }
  }

  /** Aborts every pending checkpoint (a failover, the job's end). */
  abortPendingCheckpoints(reason: CheckpointFailureReason): void {
    for (const pending of [...this.pendingCheckpoints.values()]) this.abort(pending, reason);
  }

  /**
   * Stops the coordinator at the job's end: lets a checkpoint whose `_metadata` is being written
   * complete, aborts the other pending ones, deletes the retained checkpoints unless
   * `execution.checkpointing.externalized-checkpoint-retention` keeps them for `status`, and
   * waits until no file operation is left. Idempotent.
   */
  async shutdown(status: CheckpointCoordinatorShutdownStatus): Promise<void> {
    this.stopCheckpointScheduler();
    if (this.shutDown) {
      await this.settleFileOperations();
      return;
    }
    this.shutDown = true;
    while (this.finalizations.size > 0) await Promise.all([...this.finalizations]);
    this.abortPendingCheckpoints(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN);
    const retention = this.configuration.retention;
    const keep =
      retention === "RETAIN_ON_CANCELLATION" ||
      (retention === "DELETE_ON_CANCELLATION" && status === "FAILED");
    if (!keep) {
      for (const checkpoint of [...this.completed.splice(0), ...this.unusable]) {
        this.track(this.storage.discardCheckpoint(checkpoint.checkpointId));
      }
    }
    await this.settleFileOperations();
  }

  // ---------------------------------------------------------------------------- internals

  private scheduleNextTrigger(): void {
    this.schedulerTimer = setTimeout(() => {
      // A trigger that cannot start now (a task not running yet, too many pending) is skipped,
      // as Flink's periodic scheduler does; the next interval tries again.
      this.startCheckpoint();
      if (this.schedulerTimer !== undefined) this.scheduleNextTrigger();
    }, this.configuration.interval);
  }

  /** Starts a checkpoint, or says why it cannot. */
  private startCheckpoint(): PendingCheckpoint | string {
    if (this.shutDown) return "the checkpoint coordinator is shut down";
    if (this.pendingCheckpoints.size >= this.configuration.maxConcurrentCheckpoints) {
      return `${this.pendingCheckpoints.size} checkpoint(s) are pending (execution.checkpointing.max-concurrent-checkpoints: ${this.configuration.maxConcurrentCheckpoints})`;
    }
    const plan = this.options.calculateCheckpointPlan();
    if (typeof plan === "string") return plan;
    const checkpointId = this.nextCheckpointId++;
    const timestamp = Date.now();
    const pending = new PendingCheckpoint(
      checkpointId,
      timestamp,
      plan.tasksToWaitFor,
      plan.finishedTasks ?? [],
    );
    this.commitTargets.set(checkpointId, plan.tasksToCommitTo ?? []);
    this.pendingCheckpoints.set(checkpointId, pending);
    pending.timer = setTimeout(
      () => this.abort(pending, CheckpointFailureReason.CHECKPOINT_EXPIRED),
      this.configuration.timeout,
    );
    for (const task of plan.tasksToTrigger) {
      task.gateway
        .triggerCheckpoint(task.executionAttemptId, checkpointId, BigInt(timestamp))
        .catch((error: unknown) => {
          const cause = new CheckpointError(
            `checkpoint ${checkpointId} could not be triggered at ${task.name}: ${(error as Error).message}`,
            { cause: error },
          );
          this.abort(pending, CheckpointFailureReason.TRIGGER_CHECKPOINT_FAILURE, cause);
        });
    }
    return pending;
  }

  private completePendingCheckpoint(pending: PendingCheckpoint): void {
    pending.finalizing = true;
    clearTimeout(pending.timer);
    const finalization = this.finalize(pending);
    this.finalizations.add(finalization);
    void finalization.then(() => this.finalizations.delete(finalization));
  }

  private async finalize(pending: PendingCheckpoint): Promise<void> {
    let metadataPath: string;
    try {
      metadataPath = await this.storage.writeMetadata(pending.checkpointId, pending.metadata());
    } catch (error) {
      this.abort(pending, CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE, error as Error);
      this.track(this.storage.discardCheckpoint(pending.checkpointId));
      return;
    }
    if (pending.disposed) {
      // Aborted while the metadata was written (a failover): the folder is garbage again.
      this.track(this.storage.discardCheckpoint(pending.checkpointId));
      return;
    }
    const checkpoint = pending.toCompleted(metadataPath, Date.now());
    const store = this.options.storeCompletedCheckpoint;
    if (store !== undefined) {
      try {
        await store(checkpoint);
      } catch (error) {
        this.abort(pending, CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE, error as Error);
        this.track(this.storage.discardCheckpoint(pending.checkpointId));
        return;
      }
      // Aborted by a failover while it was stored: this job manager restores an older one, but
      // one taking over may restore this one, so its files stay.
      if (pending.disposed) return;
    }
    pending.disposed = true;
    this.pendingCheckpoints.delete(pending.checkpointId);
    this.completed.push(checkpoint);
    this.latest = checkpoint;
    this.completedCount++;
    this.consecutiveFailures = 0;
    let lastSubsumed: CompletedCheckpoint | undefined;
    while (this.completed.length > this.configuration.maxRetainedCheckpoints) {
      lastSubsumed = this.completed.shift() as CompletedCheckpoint;
      this.track(this.storage.discardCheckpoint(lastSubsumed.checkpointId));
    }
    this.notifyComplete(checkpoint, lastSubsumed?.checkpointId);
    for (const older of [...this.pendingCheckpoints.values()]) {
      if (older.checkpointId < checkpoint.checkpointId) {
        this.abort(older, CheckpointFailureReason.CHECKPOINT_SUBSUMED);
      }
    }
    for (const waiter of this.takeWaiters(checkpoint.checkpointId)) waiter.resolve(checkpoint);
  }

  private abort(pending: PendingCheckpoint, reason: CheckpointFailureReason, error?: Error): void {
    if (pending.disposed) return;
    pending.disposed = true;
    clearTimeout(pending.timer);
    this.pendingCheckpoints.delete(pending.checkpointId);
    this.abortedCount++;
    this.lastFailure = { checkpointId: pending.checkpointId, reason, ...(error ? { error } : {}) };
    this.notifyAborted(pending.checkpointId);
    // A checkpoint being finalized keeps its files: its finalization decides (it may have been
    // stored for a job manager taking over already).
    if (!pending.finalizing) {
      const handles = pending.stateHandles();
      this.track(
        (async () => {
          for (const handle of handles) await this.storage.discardState(handle);
          await this.storage.discardCheckpoint(pending.checkpointId);
        })(),
      );
    }
    const failure = new CheckpointError(
      `checkpoint ${pending.checkpointId} was aborted (${reason})${error === undefined ? "" : `: ${error.message}`}`,
      error === undefined ? undefined : { cause: error },
    );
    for (const waiter of this.takeWaiters(pending.checkpointId)) waiter.reject(failure);
    if (!isCountedCheckpointFailure(reason) || this.shutDown) return;
    this.consecutiveFailures++;
    const tolerable = this.configuration.tolerableCheckpointFailureNumber;
    if (this.consecutiveFailures > tolerable) {
      this.consecutiveFailures = 0;
      this.options.onTolerableFailuresExceeded(
        new CheckpointError(
          `${tolerable + 1} checkpoint failure(s) in a row exceed execution.checkpointing.tolerable-failed-checkpoints (${tolerable}); the last: ${failure.message}`,
          { cause: failure },
        ),
      );
    }
  }

  /**
   * Tells every task of `checkpoint` that it completed, and that `lastSubsumed` (the completed
   * checkpoint it made the job stop retaining, if any) was subsumed (Flink's
   * `sendAcknowledgeMessages`). A notification that cannot be delivered is dropped: the task is
   * gone (finished, canceled, its TaskExecutor lost), and a restored attempt commits what the
   * checkpoint holds on restore.
   */
  private notifyComplete(checkpoint: CompletedCheckpoint, lastSubsumed: bigint | undefined): void {
    const targets = this.takeCommitTargets(checkpoint.checkpointId);
    const timestamp = BigInt(checkpoint.timestamp);
    for (const task of targets) {
      const { executionAttemptId } = task;
      const id = checkpoint.checkpointId;
      (lastSubsumed === undefined
        ? task.gateway.notifyCheckpointComplete?.(executionAttemptId, id, timestamp)
        : task.gateway.notifyCheckpointComplete?.(executionAttemptId, id, timestamp, lastSubsumed)
      )?.catch(() => {});
    }
  }

  /** Tells every task of aborted checkpoint `checkpointId` so (Flink's `sendAbortedMessages`). */
  private notifyAborted(checkpointId: bigint): void {
    const targets = this.takeCommitTargets(checkpointId);
    const latest = this.latest?.checkpointId ?? 0n;
    for (const task of targets) {
      // Dropped when undeliverable, as in notifyComplete.
      task.gateway
        .notifyCheckpointAborted?.(task.executionAttemptId, checkpointId, latest)
        .catch(() => {});
    }
  }

  private takeCommitTargets(checkpointId: bigint): readonly CheckpointNotificationTarget[] {
    const targets = this.commitTargets.get(checkpointId) ?? [];
    this.commitTargets.delete(checkpointId);
    return targets;
  }

  private discardLateState(ack: AcknowledgeCheckpoint): void {
    const handle = ack.stateHandle;
    if (handle === undefined) return;
    // A retained checkpoint has every acknowledgement of its own; never delete from it.
    if (this.completed.some((checkpoint) => checkpoint.checkpointId === ack.checkpointId)) return;
    this.track(this.storage.discardState(handle));
  }

  private takeWaiters(checkpointId: bigint): CompletionWaiter[] {
    const list = this.waiters.get(checkpointId) ?? [];
    this.waiters.delete(checkpointId);
    return list;
  }

  /** Runs a file operation in the background; its failure is kept for the job's result. */
  private track(operation: Promise<void>): void {
    const tracked = operation.catch((error: unknown) => {
      this.discardFailures.push(asError(error));
    });
    this.fileOperations.add(tracked);
    void tracked.then(() => this.fileOperations.delete(tracked));
  }

  private async settleFileOperations(): Promise<void> {
    while (this.fileOperations.size > 0) await Promise.all([...this.fileOperations]);
  }
}
