import type { CheckpointIDCounter } from "@sluice/runtime-api";
import type { CheckpointCoordinatorOptions } from "./checkpoints/checkpoint-coordinator.js";
import type { CheckpointCoordinatorConfiguration } from "./checkpoints/checkpoint-coordinator-configuration.js";
import type { CompletedCheckpoint } from "./checkpoints/completed-checkpoint.js";
import type { JobStatusListener } from "./job-status.js";
import type { RestartBackoffTimeStrategy } from "./restart-backoff-time-strategy.js";

/** How a job checkpoints and recovers; what {@link JobDeployer} reads from the configuration. */
export interface JobExecutionOptions {
  /** Present when the job takes checkpoints (`execution.checkpointing.interval` is set). */
  readonly checkpointing?: CheckpointCoordinatorConfiguration;
  /** Whether and when a failed job restarts (`restart-strategy.*`). */
  readonly restartStrategy: RestartBackoffTimeStrategy;
  /** What a failure restarts (`jobmanager.execution.failover-strategy`, default `region`). */
  readonly failoverStrategy?: "full" | "region";
  /**
   * The leadership epoch every task of the job is deployed with (`Task.leadershipEpoch`): unique
   * per job-manager leadership. Absent: tasks see `"0"`.
   */
  readonly leadershipEpoch?: string;
  /** Told of each status change of the job, with the failure behind FAILING or RESTARTING. */
  readonly statusListener?: JobStatusListener;
  /**
   * A checkpoint of an earlier run of this job (another job manager's, after a failover): the
   * first deployment restores it, and checkpoint ids continue after it.
   */
  readonly restoreFrom?: CompletedCheckpoint;
  /**
   * Stores each completed checkpoint before the tasks are told that it completed (see
   * {@link CheckpointCoordinatorOptions.storeCompletedCheckpoint}).
   */
  readonly storeCompletedCheckpoint?: CheckpointCoordinatorOptions["storeCompletedCheckpoint"];
  /**
   * Where the job's checkpoint ids come from (see
   * {@link CheckpointCoordinatorOptions.checkpointIdCounter}).
   */
  readonly checkpointIdCounter?: CheckpointIDCounter;
  /**
   * Whether the job's end deletes its retained checkpoints (see
   * {@link CheckpointCoordinatorOptions.discardRetainedOnShutdown}); default true.
   */
  readonly discardRetainedCheckpointsOnShutdown?: boolean;
}
