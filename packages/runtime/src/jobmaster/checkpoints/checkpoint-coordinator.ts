import {
  ErrorCodes,
  type ExecutionAttemptID,
  IllegalStateError,
  isSluiceError,
  type JobID,
  SnapshotType,
} from "@sluice/core";
import type { CheckpointIDCounter } from "@sluice/runtime-api";
import { CheckpointError } from "../../checkpointing/checkpoint-error.js";
import { emitCheckpointWarning } from "../../checkpointing/checkpoint-warning.js";
import { FsCheckpointStorage } from "../../checkpointing/fs-checkpoint-storage.js";
import type { AcknowledgeCheckpoint } from "../../messages/acknowledge-checkpoint.js";
import {
  CheckpointFailureReason,
  isCountedCheckpointFailure,
} from "../../messages/checkpoint-failure-reason.js";
import {
  type CheckpointTriggerOptions,
  isSavepoint,
  isSynchronousSavepoint,
} from "../../messages/checkpoint-trigger-options.js";
import type { DeclineCheckpoint } from "../../messages/decline-checkpoint.js";
import { deserializeThrowable } from "../../messages/serialized-throwable.js";
import type { TaskExecutorGateway } from "../../messages/task-executor-gateway.js";
import { asError } from "../../util/as-error.js";
import {
  type CheckpointCoordinatorConfiguration,
  retainsCheckpointsAfter,
} from "./checkpoint-coordinator-configuration.js";
import type { CheckpointedVertex, CompletedCheckpoint } from "./completed-checkpoint.js";
import { PendingCheckpoint, type TaskToWaitFor } from "./pending-checkpoint.js";
import { StandaloneCheckpointIDCounter } from "./standalone-checkpoint-id-counter.js";

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
  /**
   * The job's vertices with their parallelism and max parallelism, recorded in `_metadata` for a
   * restore at another parallelism. None when left out.
   */
  readonly vertices?: readonly CheckpointedVertex[];
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
   * never be notified. A rejection fails the checkpoint (`FINALIZE_CHECKPOINT_FAILURE`); its
   * folder is deleted only when the store surely did not store it. It resolves with the ids of
   * the checkpoints the store dropped to keep its retained number, whose folders are deleted
   * then; with nothing, the coordinator keeps `state.checkpoints.num-retained` itself.
   */
  readonly storeCompletedCheckpoint?: (
    checkpoint: CompletedCheckpoint,
  ) => Promise<readonly bigint[] | undefined>;
  /**
   * Where checkpoint ids come from (Flink's `CheckpointIDCounter`): under high availability the
   * store's counter, shared by every leader, so that no id (and no `chk-<id>` folder) is ever
   * used twice for a job, not even by a job manager that lost its leadership. Default: a counter
   * of this coordinator's own, from 1.
   */
  readonly checkpointIdCounter?: CheckpointIDCounter;
  /**
   * Whether {@link CheckpointCoordinator.shutdown} deletes the retained checkpoints of a job that
   * ended for good (as `externalized-checkpoint-retention` says). Default true. False when they
   * belong to a completed-checkpoint store whose owner removes them once the job's result is
   * stored (the cluster's `JobManager` under high availability): a job manager that dies between
   * deleting them and storing the result would leave a job a new leader runs again from the
   * start.
   */
  readonly discardRetainedOnShutdown?: boolean;
}

/**
 * How the job ended, which decides whether retained checkpoints are deleted: never for
 * SUSPENDED (the job goes on under another job manager, which restores them).
 */
export type CheckpointCoordinatorShutdownStatus = "FINISHED" | "FAILED" | "CANCELED" | "SUSPENDED";

interface CompletionWaiter {
  resolve(checkpoint: CompletedCheckpoint): void;
  reject(error: Error): void;
}

/** What a trigger asks for: a checkpoint, or a savepoint into a target folder. */
interface TriggerRequest {
  readonly snapshotType: SnapshotType;
  /** A savepoint's target folder (its own `savepoint-…` folder is created in it). */
  readonly targetDirectory?: string;
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
 * Checkpoint ids come from the {@link CheckpointCoordinatorOptions.checkpointIdCounter} and
 * increase for the life of the job, across restarts and (with a high-availability counter)
 * across job managers, so an acknowledgement of an attempt that was restarted can never be
 * mistaken for one of the new attempt, and two leaders never write into the same `chk-<id>`.
 *
 * Deleting is the job side's only way to lose a checkpoint a restore needs, so it deletes only
 * what nobody else may read: a checkpoint that was never stored, or one the completed-checkpoint
 * store says it dropped. A checkpoint whose storing failed in a way that may still have stored it
 * (the coordination service unreachable) is kept, as Flink keeps one after a
 * `PossibleInconsistentStateException`. Once {@link suspend}ed (the job manager lost its
 * leadership or is closing under high availability) it deletes nothing at all.
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
  private readonly counter: CheckpointIDCounter;
  /** The restored checkpoint's id: the counter must hand out ids above it. */
  private counterFloor: bigint | undefined;
  /** The highest id taken so far: a counter must never hand it out again. */
  private highestId = 0n;
  /** Triggers waiting for their checkpoint id: they count as pending. */
  private triggering = 0;
  /** A stop-with-savepoint's savepoint is being triggered or pending: nothing else starts. */
  private stopping = false;
  private suspended = false;
  private schedulerTimer: NodeJS.Timeout | undefined;
  private completedCount = 0;
  private abortedCount = 0;
  private consecutiveFailures = 0;
  private lastFailure: CheckpointFailure | undefined;
  private latest: CompletedCheckpoint | undefined;
  private lastSavepoint: CompletedCheckpoint | undefined;
  private shutDown = false;

  constructor(options: CheckpointCoordinatorOptions) {
    this.options = options;
    this.configuration = options.configuration;
    this.storage = new FsCheckpointStorage(
      options.configuration.checkpointsDirectory,
      options.jobId,
    );
    this.counter = options.checkpointIdCounter ?? new StandaloneCheckpointIDCounter();
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
    if (this.highestId < checkpoint.checkpointId) this.highestId = checkpoint.checkpointId;
    if (this.counterFloor === undefined || this.counterFloor < checkpoint.checkpointId) {
      this.counterFloor = checkpoint.checkpointId;
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
    return new Promise((resolve, reject) => {
      void this.startCheckpoint({ resolve, reject }).then((started) => {
        if (typeof started === "string") {
          reject(new CheckpointError(`no checkpoint was triggered: ${started}`));
        }
      });
    });
  }

  /**
   * Triggers a savepoint (Flink's `triggerSavepoint` / `triggerSynchronousSavepoint`): a
   * checkpoint taken on request into a folder of its own, `savepoint-<job>-<random>` in
   * `targetDirectory` (default `state.savepoints.dir`), whose `_metadata` names its files
   * relative to that folder. It is aligned (no in-flight data), never counts against
   * `max-concurrent-checkpoints` or `tolerable-failed-checkpoints`, is not a checkpoint the job
   * restores after a failure, and the job never deletes it — except the folder of one that did
   * not complete. Tasks are told of its completion only when it is synchronous
   * (`SAVEPOINT_SUSPEND` / `SAVEPOINT_TERMINATE`, a stop-with-savepoint: then the tasks finish);
   * while that one is pending no other checkpoint or savepoint starts.
   *
   * @throws CheckpointError when it cannot start (no target folder, not every task runs, a
   *   stop-with-savepoint is pending) or is aborted, naming the reason.
   */
  triggerSavepoint(
    targetDirectory: string | undefined,
    snapshotType: SnapshotType = SnapshotType.SAVEPOINT,
  ): Promise<CompletedCheckpoint> {
    if (!isSavepoint(snapshotType)) {
      return Promise.reject(
        new IllegalStateError(`triggerSavepoint takes a savepoint type, not ${snapshotType}`),
      );
    }
    const target = targetDirectory ?? this.configuration.savepointsDirectory;
    if (target === undefined) {
      return Promise.reject(
        new CheckpointError(
          `no savepoint of job ${this.options.jobId} was triggered: no target folder was given and state.savepoints.dir is unset`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      void this.startCheckpoint(
        { resolve, reject },
        { snapshotType, targetDirectory: target },
      ).then((started) => {
        if (typeof started === "string") {
          reject(new CheckpointError(`no savepoint was triggered: ${started}`));
        }
      });
    });
  }

  /** A task acknowledged a checkpoint (see `JobMasterGateway.acknowledgeCheckpoint`). */
  receiveAcknowledgeMessage(ack: AcknowledgeCheckpoint): void {
    if (!ack.jobId.equals(this.options.jobId)) return;
    const pending = this.pendingCheckpoints.get(ack.checkpointId);
    if (
      ack.stateHandle !== undefined &&
      !this.storage.holds(
        ack.stateHandle,
        ack.checkpointId,
        ack.executionAttemptId,
        pending?.location,
      )
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
            `the snapshot of task ${ack.executionAttemptId} is ${ack.stateHandle.path}, not ${this.storage.taskStateFile(ack.checkpointId, ack.executionAttemptId, pending.location)}, its file in the checkpoint's folder (every process must use the same state.checkpoints.dir)`,
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
    if (status === "SUSPENDED") this.suspend();
    if (this.shutDown) {
      await this.settleFileOperations();
      return;
    }
    this.shutDown = true;
    while (this.finalizations.size > 0) await Promise.all([...this.finalizations]);
    this.abortPendingCheckpoints(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN);
    const keep =
      this.suspended ||
      status === "SUSPENDED" ||
      this.options.discardRetainedOnShutdown === false ||
      retainsCheckpointsAfter(this.configuration.retention, status);
    if (!keep) {
      for (const checkpoint of [...this.completed.splice(0), ...this.unusable]) {
        // A savepoint or checkpoint the job was started from by path is not the job's own.
        if (checkpoint.discardable) {
          this.track(this.storage.discardCheckpoint(checkpoint.checkpointId));
        }
      }
    }
    await this.settleFileOperations();
  }

  /**
   * The job is suspended (Flink's SUSPENDED: this job manager lost its leadership, or closes
   * while another one is to take the job over): no checkpoint is triggered any more, pending
   * ones are aborted, and nothing is deleted from now on — not the retained checkpoints the
   * completed-checkpoint store names, not even this coordinator's own pending ones (they are
   * garbage, but a job manager that may no longer lead does not touch the shared folder).
   * Idempotent.
   */
  suspend(): void {
    if (this.suspended) return;
    this.suspended = true;
    this.stopCheckpointScheduler();
    this.abortPendingCheckpoints(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SUSPEND);
  }

  // ---------------------------------------------------------------------------- internals

  private scheduleNextTrigger(): void {
    this.schedulerTimer = setTimeout(() => {
      // A trigger that cannot start now (a task not running yet, too many pending) is skipped,
      // as Flink's periodic scheduler does; the next interval tries again.
      void this.startCheckpoint();
      if (this.schedulerTimer !== undefined) this.scheduleNextTrigger();
    }, this.configuration.interval);
  }

  /**
   * Starts a checkpoint or savepoint (its id from the counter first), or says why it cannot.
   * `waiter` is registered as soon as the checkpoint exists, so it learns of an abort that comes
   * at once.
   */
  private async startCheckpoint(
    waiter?: CompletionWaiter,
    request: TriggerRequest = { snapshotType: SnapshotType.CHECKPOINT },
  ): Promise<PendingCheckpoint | string> {
    const savepoint = isSavepoint(request.snapshotType);
    const synchronous = isSynchronousSavepoint(request.snapshotType);
    const refused = this.refusal(savepoint);
    if (refused !== undefined) return refused;
    if (synchronous && !this.configuration.checkpointsAfterTasksFinish) {
      return "a stop-with-savepoint needs execution.checkpointing.checkpoints-after-tasks-finish (its tasks end their data, then take the savepoint)";
    }
    // Asked before an id is taken, so that a job whose tasks do not run yet uses up no ids;
    // asked again once the id came, as the tasks may have changed meanwhile.
    const early = this.options.calculateCheckpointPlan();
    if (typeof early === "string") return early;
    this.triggering++;
    if (synchronous) this.stopping = true;
    let checkpointId: bigint;
    let location: string | undefined;
    try {
      try {
        checkpointId = await this.takeCheckpointId();
      } catch (error) {
        // A counter that refuses (a job manager that lost its leadership) fails no checkpoint:
        // none started, and the job is about to be suspended.
        return `no checkpoint id: ${asError(error).message}`;
      }
      if (savepoint) {
        try {
          location = await FsCheckpointStorage.initializeLocationForSavepoint(
            request.targetDirectory as string,
            this.options.jobId,
          );
        } catch (error) {
          return asError(error).message;
        }
      }
    } finally {
      this.triggering--;
      if (synchronous) this.stopping = false;
    }
    const trigger: CheckpointTriggerOptions = {
      snapshotType: request.snapshotType,
      ...(location === undefined ? {} : { targetLocation: location }),
    };
    const unstarted = (why: string): string => {
      if (location !== undefined) this.discardSavepointFolder(location);
      return why;
    };
    if (this.shutDown || this.suspended)
      return unstarted("the checkpoint coordinator is shut down");
    const plan = this.options.calculateCheckpointPlan();
    if (typeof plan === "string") return unstarted(plan);
    const timestamp = Date.now();
    const pending = new PendingCheckpoint(
      checkpointId,
      timestamp,
      plan.tasksToWaitFor,
      plan.finishedTasks ?? [],
      { trigger, vertices: plan.vertices ?? [], jobId: this.options.jobId },
    );
    this.commitTargets.set(checkpointId, plan.tasksToCommitTo ?? []);
    this.pendingCheckpoints.set(checkpointId, pending);
    if (waiter !== undefined) this.waiters.set(checkpointId, [waiter]);
    pending.timer = setTimeout(
      () => this.abort(pending, CheckpointFailureReason.CHECKPOINT_EXPIRED),
      this.configuration.timeout,
    );
    for (const task of plan.tasksToTrigger) {
      // A checkpoint's trigger is sent as before; only a savepoint carries options.
      (savepoint
        ? task.gateway.triggerCheckpoint(
            task.executionAttemptId,
            checkpointId,
            BigInt(timestamp),
            trigger,
          )
        : task.gateway.triggerCheckpoint(task.executionAttemptId, checkpointId, BigInt(timestamp))
      ).catch((error: unknown) => {
        const cause = new CheckpointError(
          `checkpoint ${checkpointId} could not be triggered at ${task.name}: ${(error as Error).message}`,
          { cause: error },
        );
        this.abort(pending, CheckpointFailureReason.TRIGGER_CHECKPOINT_FAILURE, cause);
      });
    }
    return pending;
  }

  /**
   * Why no checkpoint may start now, or `undefined`. A savepoint is not held back by
   * `max-concurrent-checkpoints` (Flink's forced checkpoints); nothing starts while a
   * stop-with-savepoint is pending.
   */
  private refusal(savepoint = false): string | undefined {
    if (this.shutDown || this.suspended) return "the checkpoint coordinator is shut down";
    if (this.stopping || [...this.pendingCheckpoints.values()].some((p) => p.isSynchronous)) {
      return "a stop-with-savepoint is in progress";
    }
    if (savepoint) return undefined;
    const pending =
      [...this.pendingCheckpoints.values()].filter((p) => !p.isSavepoint).length + this.triggering;
    if (pending >= this.configuration.maxConcurrentCheckpoints) {
      return `${pending} checkpoint(s) are pending (execution.checkpointing.max-concurrent-checkpoints: ${this.configuration.maxConcurrentCheckpoints})`;
    }
    return undefined;
  }

  /**
   * The next id from the counter: above the restored checkpoint's (the counter is moved past it
   * first when it is not), and above every id this coordinator took.
   *
   * @throws the counter's error (a FencingTokenError once this job manager lost its leadership);
   *   IllegalStateError when the counter hands out an id it handed out before.
   */
  private async takeCheckpointId(): Promise<bigint> {
    const floor = this.counterFloor;
    if (floor !== undefined) {
      if ((await this.counter.get()) <= floor) await this.counter.setCount(floor + 1n);
      if (this.counterFloor === floor) this.counterFloor = undefined;
    }
    const id = await this.counter.getAndIncrement();
    if (id <= this.highestId) {
      throw new IllegalStateError(
        `the checkpoint id counter of job ${this.options.jobId} handed out ${id}, not above ${this.highestId}, which was taken already`,
      );
    }
    this.highestId = id;
    return id;
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
      metadataPath = await this.storage.writeMetadata(
        pending.checkpointId,
        pending.metadata(),
        pending.location,
      );
    } catch (error) {
      this.abort(pending, CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE, error as Error);
      this.discardUnstored(pending);
      return;
    }
    if (pending.disposed) {
      // Aborted while the metadata was written (a failover): the folder is garbage again.
      this.discardUnstored(pending);
      return;
    }
    const checkpoint = pending.toCompleted(metadataPath, Date.now());
    if (pending.isSavepoint) {
      this.completeSavepoint(pending, checkpoint);
      return;
    }
    const store = this.options.storeCompletedCheckpoint;
    let subsumedByStore: readonly bigint[] | undefined;
    if (store !== undefined) {
      try {
        subsumedByStore = (await store(checkpoint)) ?? undefined;
      } catch (error) {
        this.abort(pending, CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE, error as Error);
        if (isNotStored(error)) {
          this.discardUnstored(pending);
        } else {
          emitCheckpointWarning(
            `job ${this.options.jobId}: checkpoint ${pending.checkpointId} is kept in ${this.storage.checkpointDirectory(pending.checkpointId)}: storing it failed in a way that may have stored it (${asError(error).message}), and a job manager taking over may restore it`,
          );
        }
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
    let lastSubsumed: bigint | undefined;
    if (subsumedByStore === undefined) {
      while (this.completed.length > this.configuration.maxRetainedCheckpoints) {
        const subsumed = this.completed.shift() as CompletedCheckpoint;
        // One the job was started from by path (a savepoint) is not the job's to delete.
        if (!subsumed.discardable) continue;
        lastSubsumed = subsumed.checkpointId;
        this.track(this.storage.discardCheckpoint(subsumed.checkpointId));
      }
    } else {
      // The store decides what is retained: it dropped these in the same write that added the
      // new one, so no leader reads them any more. What this coordinator alone still lists is
      // only forgotten here (a restart restores the newest).
      for (const id of subsumedByStore) {
        if (id === checkpoint.checkpointId) continue;
        if (lastSubsumed === undefined || id > lastSubsumed) lastSubsumed = id;
        this.track(this.storage.discardCheckpoint(id));
      }
      const dropped = new Set(subsumedByStore);
      this.completed.splice(
        0,
        this.completed.length,
        ...this.completed
          .filter((c) => !dropped.has(c.checkpointId))
          .slice(-this.configuration.maxRetainedCheckpoints),
      );
    }
    this.notifyComplete(checkpoint, lastSubsumed);
    this.dropSubsumedCheckpoints(checkpoint.checkpointId);
    for (const waiter of this.takeWaiters(checkpoint.checkpointId)) waiter.resolve(checkpoint);
  }

  /**
   * A savepoint completed (its `_metadata` is written): it is counted, and, when it is a
   * stop-with-savepoint's, the tasks are told (they finish then) and older pending checkpoints
   * are aborted as subsumed. It is neither stored nor retained: a failure never restores it, and
   * the job never deletes it.
   */
  private completeSavepoint(pending: PendingCheckpoint, savepoint: CompletedCheckpoint): void {
    pending.disposed = true;
    this.pendingCheckpoints.delete(pending.checkpointId);
    this.completedCount++;
    this.lastSavepoint = savepoint;
    if (pending.isSynchronous) {
      this.notifyComplete(savepoint, undefined);
      this.dropSubsumedCheckpoints(savepoint.checkpointId);
    } else {
      this.commitTargets.delete(pending.checkpointId);
    }
    for (const waiter of this.takeWaiters(savepoint.checkpointId)) waiter.resolve(savepoint);
  }

  /**
   * Aborts the pending checkpoints older than `checkpointId`, which completed (Flink's
   * `dropSubsumedCheckpoints`): a pending savepoint is never subsumed, it completes or fails on
   * its own.
   */
  private dropSubsumedCheckpoints(checkpointId: bigint): void {
    for (const older of [...this.pendingCheckpoints.values()]) {
      if (older.checkpointId < checkpointId && !older.isSavepoint) {
        this.abort(older, CheckpointFailureReason.CHECKPOINT_SUBSUMED);
      }
    }
  }

  /** The newest savepoint that completed, if any. */
  get latestSavepoint(): CompletedCheckpoint | undefined {
    return this.lastSavepoint;
  }

  /**
   * Deletes the folder of a checkpoint no store holds (its id is this coordinator's alone), or
   * of a savepoint that did not complete.
   */
  private discardUnstored(pending: PendingCheckpoint): void {
    if (this.suspended) return;
    if (pending.location !== undefined) {
      this.discardSavepointFolder(pending.location);
      return;
    }
    this.track(this.storage.discardCheckpoint(pending.checkpointId));
  }

  private discardSavepointFolder(location: string): void {
    this.track(FsCheckpointStorage.discardSavepoint(location));
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
    // stored for a job manager taking over already). A suspended job deletes nothing.
    if (!pending.finalizing && !this.suspended) {
      const handles = pending.stateHandles();
      const location = pending.location;
      this.track(
        location !== undefined
          ? FsCheckpointStorage.discardSavepoint(location)
          : (async () => {
              for (const handle of handles) await this.storage.discardState(handle);
              await this.storage.discardCheckpoint(pending.checkpointId);
            })(),
      );
    }
    const failure = new CheckpointError(
      `${pending.isSavepoint ? "savepoint" : "checkpoint"} ${pending.checkpointId} was aborted (${reason})${error === undefined ? "" : `: ${error.message}`}`,
      error === undefined ? undefined : { cause: error },
    );
    for (const waiter of this.takeWaiters(pending.checkpointId)) waiter.reject(failure);
    // A savepoint that failed says nothing about the job's checkpoints (Flink counts no
    // savepoint towards its tolerable failures).
    if (pending.isSavepoint) return;
    // A store that refused for a lost leadership says nothing about the job: it is about to be
    // suspended, and must not fail over on a job manager that no longer leads.
    if (!isCountedCheckpointFailure(reason) || this.shutDown || this.suspended) return;
    if (isSluiceError(error, ErrorCodes.HA_FENCED)) return;
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
    if (handle === undefined || this.suspended) return;
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

/**
 * True when the completed-checkpoint store surely did not store the checkpoint: it refused the
 * write for a lost leadership (fenced: the coordination service compared and refused), or the
 * checkpoint itself (not newer than the stored ones). Any other failure (the coordination
 * service unreachable, a timeout) may have stored it.
 */
function isNotStored(error: unknown): boolean {
  return (
    isSluiceError(error, ErrorCodes.HA_FENCED) || isSluiceError(error, ErrorCodes.INVALID_ARGUMENT)
  );
}
