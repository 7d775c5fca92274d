import { type CheckpointStatsSource, CheckpointStatsTracker } from "@sluice/runtime/plugin";

/** The newest completed checkpoint (Flink's `CompletedCheckpointStatistics`, the fields Sluice has). */
export interface CompletedCheckpointStatistics {
  readonly id: number;
  readonly status: "COMPLETED";
  readonly is_savepoint: false;
  /** When it was triggered (ms since the epoch). */
  readonly trigger_timestamp: number;
  /** When the last task acknowledged it and its metadata was written. */
  readonly latest_ack_timestamp: number;
  /** Bytes of its snapshot files (every checkpoint is a full one). */
  readonly checkpointed_size: number;
  readonly state_size: number;
  /** Milliseconds from trigger to completion. */
  readonly end_to_end_duration: number;
  /** Bytes the tasks read while aligning their barriers. */
  readonly processed_data: number;
  /** Bytes of in-flight data stored (unaligned checkpoints). */
  readonly persisted_data: number;
  /** The longest alignment of a task, in ms (Sluice). */
  readonly alignment_duration: number;
  readonly num_subtasks: number;
  readonly num_acknowledged_subtasks: number;
  /** Its `_metadata` file. */
  readonly external_path: string;
}

/** `GET /jobs/:jobid/checkpoints` (Flink's `CheckpointingStatistics`, the parts Sluice has). */
export interface CheckpointingStatistics {
  /** Whether the job takes checkpoints (`execution.checkpointing.interval`; Sluice). */
  readonly enabled: boolean;
  readonly counts: {
    readonly total: number;
    readonly in_progress: number;
    readonly completed: number;
    readonly failed: number;
  };
  readonly latest: {
    readonly completed: CompletedCheckpointStatistics | null;
    /** The checkpoint the last restart restored, and when. */
    readonly restored: {
      readonly id: number;
      readonly restore_timestamp: number;
      readonly is_savepoint: false;
    } | null;
  };
}

/** The checkpoint statistics of a running job, from its coordinator and its last restore. */
export function checkpointingStatisticsOf(job: CheckpointStatsSource): CheckpointingStatistics {
  const stats = new CheckpointStatsTracker(job).snapshot();
  const latest = job.checkpointCoordinator?.latestCompletedCheckpoint;
  const restore = job.latestRestore;
  return {
    enabled: job.checkpointCoordinator !== undefined,
    counts: {
      total: stats.totalNumberOfCheckpoints,
      in_progress: stats.numberOfInProgressCheckpoints,
      completed: stats.numberOfCompletedCheckpoints,
      failed: stats.numberOfFailedCheckpoints,
    },
    latest: {
      completed:
        latest === undefined
          ? null
          : {
              id: Number(latest.checkpointId),
              status: "COMPLETED",
              is_savepoint: false,
              trigger_timestamp: latest.timestamp,
              latest_ack_timestamp: latest.completedAt,
              checkpointed_size: latest.stateSize,
              state_size: latest.stateSize,
              end_to_end_duration: latest.durationMillis,
              processed_data: latest.bytesProcessedDuringAlignment,
              persisted_data: latest.persistedDataBytes,
              alignment_duration: Math.round(latest.alignmentDurationNanos / 1e6),
              num_subtasks: latest.subtaskStates.length + latest.finishedSubtasks.length,
              num_acknowledged_subtasks:
                latest.subtaskStates.length + latest.finishedSubtasks.length,
              external_path: latest.metadataPath,
            },
      restored:
        restore === undefined
          ? null
          : {
              id: Number(restore.checkpoint.checkpointId),
              restore_timestamp: restore.at,
              is_savepoint: false,
            },
    },
  };
}
