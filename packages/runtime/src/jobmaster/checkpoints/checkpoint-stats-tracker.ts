import { MetricNames } from "../../metrics/metric-names.js";
import type { CheckpointCoordinator } from "./checkpoint-coordinator.js";
import type { CompletedCheckpoint } from "./completed-checkpoint.js";

/** What the checkpoint statistics read of a job: its coordinator and its last restore. */
export interface CheckpointStatsSource {
  /** The job's coordinator; `undefined` when the job takes no checkpoints. */
  readonly checkpointCoordinator: CheckpointCoordinator | undefined;
  /** The checkpoint the last restart restored and when (ms since the epoch). */
  readonly latestRestore:
    | { readonly checkpoint: CompletedCheckpoint; readonly at: number }
    | undefined;
}

/** Where the statistics are registered: the job's group on the job manager. */
export interface CheckpointStatsGroup {
  /** Registers a gauge `name` that reads `read` when reported. */
  gauge(name: string, read: () => number): unknown;
}

/** One job's checkpoint statistics at one moment, as the metrics report them. */
export interface CheckpointStatsSnapshot {
  /** Checkpoints triggered: completed, failed and in progress. */
  readonly totalNumberOfCheckpoints: number;
  /** Checkpoints triggered and not completed or aborted yet. */
  readonly numberOfInProgressCheckpoints: number;
  /** Checkpoints every task acknowledged and whose metadata was written. */
  readonly numberOfCompletedCheckpoints: number;
  /** Checkpoints triggered and aborted (declined, expired, subsumed, ended by a failover). */
  readonly numberOfFailedCheckpoints: number;
  /** The id of the newest completed checkpoint; -1 before the first. */
  readonly lastCompletedCheckpointId: number;
  /** Milliseconds from the newest completed checkpoint's trigger to its completion; -1 before. */
  readonly lastCheckpointDuration: number;
  /** Bytes of the newest completed checkpoint's snapshot files; -1 before the first. */
  readonly lastCheckpointSize: number;
  /** The same: every checkpoint is a full one (there are no incremental ones); -1 before. */
  readonly lastCheckpointFullSize: number;
  /** Bytes the tasks read while aligning for the newest completed checkpoint; -1 before. */
  readonly lastCheckpointProcessedData: number;
  /** Bytes of in-flight data the newest completed checkpoint stored (unaligned); -1 before. */
  readonly lastCheckpointPersistedData: number;
  /** The longest alignment of a task in the newest completed checkpoint, in ns; -1 before. */
  readonly lastCheckpointAlignmentTime: number;
  /** When the last restart restored a checkpoint (ms since the epoch); -1 without one. */
  readonly lastCheckpointRestoreTimestamp: number;
  /** The id of the checkpoint the last restart restored; -1 without one. */
  readonly lastRestoredCheckpointId: number;
}

/** The snapshot's fields that are Flink's job metrics (the others are for the dashboard). */
const REPORTED = [
  MetricNames.TOTAL_NUMBER_OF_CHECKPOINTS,
  MetricNames.NUMBER_OF_IN_PROGRESS_CHECKPOINTS,
  MetricNames.NUMBER_OF_COMPLETED_CHECKPOINTS,
  MetricNames.NUMBER_OF_FAILED_CHECKPOINTS,
  MetricNames.LAST_COMPLETED_CHECKPOINT_ID,
  MetricNames.LAST_CHECKPOINT_DURATION,
  MetricNames.LAST_CHECKPOINT_SIZE,
  MetricNames.LAST_CHECKPOINT_FULL_SIZE,
  MetricNames.LAST_CHECKPOINT_PROCESSED_DATA,
  MetricNames.LAST_CHECKPOINT_PERSISTED_DATA,
  MetricNames.LAST_CHECKPOINT_RESTORE_TIMESTAMP,
] as const satisfies readonly (keyof CheckpointStatsSnapshot)[];

/**
 * A job's checkpoint statistics on the job manager (Flink's `CheckpointStatsTracker`): counts
 * of checkpoints by outcome, figures of the newest completed one, and the latest restore, read
 * from the job's coordinator when reported. {@link register} adds them to the job's metric
 * group under Flink's names (`numberOfCompletedCheckpoints`, `lastCheckpointDuration`, …);
 * {@link snapshot} returns them together. Without checkpointing every count is 0 and every
 * "last" figure -1, as in Flink.
 */
export class CheckpointStatsTracker {
  private readonly source: CheckpointStatsSource;

  /** @param source the job whose statistics are read (its `JobExecution`). */
  constructor(source: CheckpointStatsSource) {
    this.source = source;
  }

  /** Registers Flink's job checkpoint metrics on `group`. */
  register(group: CheckpointStatsGroup): void {
    for (const name of REPORTED) group.gauge(name, () => this.snapshot()[name]);
  }

  /** The statistics now. */
  snapshot(): CheckpointStatsSnapshot {
    const coordinator = this.source.checkpointCoordinator;
    const completed = coordinator?.numberOfCompletedCheckpoints ?? 0;
    const failed = coordinator?.numberOfAbortedCheckpoints ?? 0;
    const inProgress = coordinator?.numberOfPendingCheckpoints ?? 0;
    const latest = coordinator?.latestCompletedCheckpoint;
    const restore = this.source.latestRestore;
    return {
      totalNumberOfCheckpoints: completed + failed + inProgress,
      numberOfInProgressCheckpoints: inProgress,
      numberOfCompletedCheckpoints: completed,
      numberOfFailedCheckpoints: failed,
      lastCompletedCheckpointId: latest === undefined ? -1 : Number(latest.checkpointId),
      lastCheckpointDuration: latest?.durationMillis ?? -1,
      lastCheckpointSize: latest?.stateSize ?? -1,
      lastCheckpointFullSize: latest?.stateSize ?? -1,
      lastCheckpointProcessedData: latest?.bytesProcessedDuringAlignment ?? -1,
      lastCheckpointPersistedData: latest?.persistedDataBytes ?? -1,
      lastCheckpointAlignmentTime: latest?.alignmentDurationNanos ?? -1,
      lastCheckpointRestoreTimestamp: restore?.at ?? -1,
      lastRestoredCheckpointId:
        restore === undefined ? -1 : Number(restore.checkpoint.checkpointId),
    };
  }
}
