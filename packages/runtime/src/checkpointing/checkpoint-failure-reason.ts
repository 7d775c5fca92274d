/**
 * Why a barrier handler aborted a checkpoint (the subset of Flink's CheckpointFailureReason a
 * handler reports). The values are stable strings, safe to log and to send to a coordinator.
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
} as const;

/** One of {@link CheckpointFailureReason}. */
export type CheckpointFailureReason =
  (typeof CheckpointFailureReason)[keyof typeof CheckpointFailureReason];
