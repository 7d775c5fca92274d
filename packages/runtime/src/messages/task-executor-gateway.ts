import type { ExecutionAttemptID, JobID, ResourceID, ResultPartitionID } from "@sluice/core";
import type { JsonValue, PartitionInfo } from "@sluice/runtime-api";
import type { CheckpointTriggerOptions } from "./checkpoint-trigger-options.js";
import type { JobMasterGateway } from "./job-master-gateway.js";
import type { TaskDeploymentDescriptor } from "./task-deployment-descriptor.js";
import type { UserCodeNames } from "./user-code-names.js";

/** Where a TaskExecutor runs and where its data server listens (Flink's `TaskManagerLocation`). */
export interface TaskManagerLocation {
  /** The TaskExecutor's resource id (`ShuffleEnvironmentContext.taskExecutorResourceId`). */
  readonly resourceId: ResourceID;
  /** The address other workers reach its data server at (`taskmanager.host`). */
  readonly host: string;
  /** Its data port (what `ShuffleEnvironment.start()` returned; -1 when local only). */
  readonly dataPort: number;
}

/**
 * What the job side calls on a TaskExecutor (Flink's `TaskExecutorGateway`, the part the
 * scheduler uses). A `TaskExecutor` in the same process implements it directly; across processes
 * the control plane implements it by sending messages.
 */
export interface TaskExecutorGateway {
  /** Where the TaskExecutor runs. */
  readonly location: TaskManagerLocation;

  /**
   * Deploys a task and runs its invokable; state changes go to `jobMaster`. Resolves once the
   * task is deployed (its writers and gates exist), not when it ends.
   */
  submitTask(descriptor: TaskDeploymentDescriptor, jobMaster: JobMasterGateway): Promise<void>;

  /** Cancels a task; resolves once the request was delivered. */
  cancelTask(executionAttemptId: ExecutionAttemptID): Promise<void>;

  /** Replaces unknown input channels of a task once their producers are known. */
  updatePartitions(
    executionAttemptId: ExecutionAttemptID,
    partitionInfos: readonly PartitionInfo[],
  ): Promise<void>;

  /** Frees the local resources of partitions of a job (`releasePartitionsLocally`). */
  releasePartitions(jobId: JobID, partitionIds: readonly ResultPartitionID[]): Promise<void>;

  /**
   * Triggers checkpoint `checkpointId` at a source task (Flink's `triggerCheckpoint`): the task
   * takes its snapshot at its next mail point, sends the barrier downstream, and its
   * acknowledgement (or decline) reaches the task's `JobMasterGateway`. Resolves once the
   * trigger is queued at the task, not when the checkpoint is done.
   *
   * Required for the sources of a job that takes checkpoints (the job side refuses to deploy a
   * source of such a job on a gateway without it); gateways for jobs without checkpoints may
   * leave it out.
   *
   * @param timestamp when the checkpoint was triggered, in ms since the epoch (the barrier's
   *   timestamp, the base of the tasks' `checkpointStartDelayNanos`).
   * @param options a savepoint's type and folder (Flink's `CheckpointOptions`); absent: a
   *   checkpoint. A stop-with-savepoint's (`SAVEPOINT_SUSPEND`, `SAVEPOINT_TERMINATE`) stops a
   *   source first (`Task.stopMode`).
   * @throws TaskNotFoundError when no such task runs there; IllegalStateError when the task is
   *   not a source or its job takes no checkpoints.
   */
  triggerCheckpoint?(
    executionAttemptId: ExecutionAttemptID,
    checkpointId: bigint,
    timestamp: bigint,
    options?: CheckpointTriggerOptions,
  ): Promise<void>;

  /**
   * Tells a task that checkpoint `checkpointId` completed (Flink's `confirmCheckpoint`, which
   * reaches the task's `notifyCheckpointComplete`): every task of the checkpoint acknowledged it
   * and its `_metadata` is written, so what the task prepared for it (a pre-committed
   * transaction) may now be made visible. It also says that every older checkpoint is done with
   * (completed or subsumed). Resolves once the notification is queued at the task.
   *
   * Optional: gateways of jobs without checkpoints, or whose tasks need no notifications, may
   * leave it out; the job side then sends none.
   *
   * @param timestamp when the checkpoint was triggered, in ms since the epoch.
   * @param lastSubsumedCheckpointId the completed checkpoint this completion made the job stop
   *   retaining (`state.checkpoints.num-retained`), if any: the task is told it was subsumed,
   *   after the completion (Flink's `lastSubsumedCheckpointId` of `confirmCheckpoint`).
   * @throws TaskNotFoundError when no such task runs there.
   */
  notifyCheckpointComplete?(
    executionAttemptId: ExecutionAttemptID,
    checkpointId: bigint,
    timestamp: bigint,
    lastSubsumedCheckpointId?: bigint,
  ): Promise<void>;

  /**
   * Tells a task that checkpoint `checkpointId` was aborted (declined, expired, subsumed by a
   * newer one, failed over; Flink's `abortCheckpoint`, which reaches the task's
   * `notifyCheckpointAborted`): what the task prepared for it will never be committed by this
   * checkpoint. The task skips the checkpoint should its trigger or barriers still come, and is
   * told of the completion of `latestCompletedCheckpointId` first, in case that notification was
   * lost. Resolves once the notification is queued at the task. Optional, as
   * `notifyCheckpointComplete`.
   *
   * @param latestCompletedCheckpointId the newest checkpoint completed so far (0 for none).
   * @throws TaskNotFoundError when no such task runs there.
   */
  notifyCheckpointAborted?(
    executionAttemptId: ExecutionAttemptID,
    checkpointId: bigint,
    latestCompletedCheckpointId: bigint,
  ): Promise<void>;

  /**
   * Delivers a job message to the job's user code on this TaskExecutor (its `messages` handler
   * named `name`; Flink's closest kin is `sendOperatorEventToTask`) and resolves with the
   * handler's reply. The job manager's REST endpoint sends `POST /jobs/:jobid/messages/:name` to
   * every TaskExecutor that runs a task of the job.
   *
   * Optional: a gateway without it cannot take job messages, which the REST endpoint reports.
   *
   * @throws IllegalStateError when no task of `jobId` runs there; IllegalArgumentError when the
   *   job's code has no handler named `name`; the handler's own error.
   */
  deliverJobMessage?(jobId: JobID, name: string, payload: JsonValue): Promise<JsonValue>;

  /**
   * The names the TaskExecutor resolves for job module `reference` (loading the module from its
   * own host when it has not yet), or, with `undefined`, for the code it was started with. The
   * job side asks every TaskExecutor before it deploys a job that names a job module, so that a
   * task manager that cannot run the job is named before any task starts.
   *
   * Optional: a gateway without it is not checked, and a missing name fails the task's
   * deployment instead.
   *
   * @throws the loader's errors (`SLUICE_ERR_PLUGIN_*`) when the module cannot be loaded there.
   */
  userCodeNames?(reference: string | undefined): Promise<UserCodeNames>;
}
