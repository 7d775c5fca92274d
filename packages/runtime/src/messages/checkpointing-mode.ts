/**
 * The guarantee a job's checkpoints give (Flink's CheckpointingMode, key
 * `execution.checkpointing.mode`). It decides the barrier handler of every task and the
 * alignment its barriers are sent with.
 */
export const CheckpointingMode = {
  /**
   * Aligned barriers (`CheckpointAlignment.ALIGNED`), handled by a
   * `SingleCheckpointBarrierHandler`: a restored job sees every record exactly once.
   */
  EXACTLY_ONCE: "EXACTLY_ONCE",
  /**
   * Non-blocking barriers (`CheckpointAlignment.AT_LEAST_ONCE`), handled by a
   * `CheckpointBarrierTracker`: no record is lost, some may be seen twice after a restore.
   */
  AT_LEAST_ONCE: "AT_LEAST_ONCE",
} as const;

/** One of {@link CheckpointingMode}. */
export type CheckpointingMode = (typeof CheckpointingMode)[keyof typeof CheckpointingMode];
