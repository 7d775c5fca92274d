/**
 * Why a checkpoint failed (Flink's CheckpointFailureReason, the values this runtime reports):
 * from the barrier handlers, from a task that declines, and from the job side's checkpoint
 * coordinator. The values are stable strings, safe to log and to send between processes.
 */
export const CheckpointFailureReason = {
  /** A CancelCheckpointMarker arrived: some upstream task declined the checkpoint. */
  CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER: "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER",
  /** A barrier of a newer checkpoint arrived before this one was aligned. */
  CHECKPOINT_DECLINED_SUBSUMED: "CHECKPOINT_DECLINED_SUBSUMED",
  /**
   * A channel ended while the checkpoint was pending, and checkpoints after tasks finish are
   * disabled.
   */
  CHECKPOINT_DECLINED_INPUT_END_OF_STREAM: "CHECKPOINT_DECLINED_INPUT_END_OF_STREAM",
  /** The task's snapshot failed (its `snapshotState` threw or returned something not JSON). */
  CHECKPOINT_DECLINED: "CHECKPOINT_DECLINED",
  /** The task was not running when the trigger arrived. */
  CHECKPOINT_DECLINED_TASK_NOT_READY: "CHECKPOINT_DECLINED_TASK_NOT_READY",
  /** The task was finishing (or finished) before it could take the snapshot. */
  CHECKPOINT_DECLINED_TASK_CLOSING: "CHECKPOINT_DECLINED_TASK_CLOSING",
  /** The snapshot was taken but could not be written (the asynchronous part failed). */
  CHECKPOINT_ASYNC_EXCEPTION: "CHECKPOINT_ASYNC_EXCEPTION",
  /** The checkpoint was not acknowledged by every task within `execution.checkpointing.timeout`. */
  CHECKPOINT_EXPIRED: "CHECKPOINT_EXPIRED",
  /** A newer checkpoint completed first. */
  CHECKPOINT_SUBSUMED: "CHECKPOINT_SUBSUMED",
  /** A trigger could not be delivered to a source task. */
  TRIGGER_CHECKPOINT_FAILURE: "TRIGGER_CHECKPOINT_FAILURE",
  /** Every task acknowledged, but the `_metadata` file could not be written. */
  FINALIZE_CHECKPOINT_FAILURE: "FINALIZE_CHECKPOINT_FAILURE",
  /** The job is failing over (a task failed or a worker was lost): pending checkpoints end. */
  JOB_FAILOVER_REGION: "JOB_FAILOVER_REGION",
  /** The job ended while the checkpoint was pending. */
  CHECKPOINT_COORDINATOR_SHUTDOWN: "CHECKPOINT_COORDINATOR_SHUTDOWN",
  /** The job was suspended (its job manager lost its leadership) while it was pending. */
  CHECKPOINT_COORDINATOR_SUSPEND: "CHECKPOINT_COORDINATOR_SUSPEND",
} as const;

/** One of {@link CheckpointFailureReason}. */
export type CheckpointFailureReason =
  (typeof CheckpointFailureReason)[keyof typeof CheckpointFailureReason];

/** Every {@link CheckpointFailureReason}, for validating one received from another process. */
export const CHECKPOINT_FAILURE_REASONS: readonly CheckpointFailureReason[] = Object.freeze(
  Object.values(CheckpointFailureReason),
);

/**
 * Whether a failure of this kind counts against `execution.checkpointing.tolerable-failed-checkpoints`
 * (Flink's CheckpointFailureManager): failures that point at a problem do; declines that are a
 * normal consequence of the job's progress (not ready, finishing, cancellation markers, subsumed,
 * a failover or the job's end) do not.
 */
export function isCountedCheckpointFailure(reason: CheckpointFailureReason): boolean {
  return (
    reason === CheckpointFailureReason.CHECKPOINT_DECLINED ||
    reason === CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION ||
    reason === CheckpointFailureReason.CHECKPOINT_EXPIRED ||
    reason === CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE
  );
}
