/**
 * The alignment figures of one checkpoint at one task, handed to the task with the trigger
 * (Flink's CheckpointMetrics as the barrier handler fills them). All zero when the handler did
 * not measure this checkpoint's alignment (e.g. an at-least-once checkpoint completed while a
 * newer one was being tracked).
 */
export interface CheckpointMetrics {
  /**
   * Nanoseconds from the first barrier of the checkpoint to the last one (Flink's
   * `checkpointAlignmentTime`); 0 for a task with one open channel.
   */
  readonly alignmentDurationNanos: number;
  /** Bytes of data buffers the task read between the first and the last barrier. */
  readonly bytesProcessedDuringAlignment: number;
  /**
   * Nanoseconds from the checkpoint's creation (the barrier's timestamp) to the arrival of its
   * first barrier at this task (Flink's `checkpointStartDelayNanos`), in millisecond resolution.
   */
  readonly checkpointStartDelayNanos: number;
}

/** The metrics of a checkpoint whose alignment was not measured. */
export const NO_CHECKPOINT_METRICS: CheckpointMetrics = Object.freeze({
  alignmentDurationNanos: 0,
  bytesProcessedDuringAlignment: 0,
  checkpointStartDelayNanos: 0,
});

/**
 * What a task reports about its part of one checkpoint with its acknowledgement (Flink's
 * CheckpointMetrics as a task sends them): the barrier handler's alignment figures, plus how long
 * the synchronous snapshot and the asynchronous write took.
 */
export interface TaskCheckpointMetrics extends CheckpointMetrics {
  /** Milliseconds the task spent taking the snapshot and forwarding the barrier. */
  readonly syncDurationMillis: number;
  /** Milliseconds writing the snapshot file took. */
  readonly asyncDurationMillis: number;
  /**
   * Bytes of in-flight data the task stored as channel state (Flink's `persistedData`): 0 for an
   * aligned checkpoint; absent from acknowledgements of builds that do not store any.
   */
  readonly persistedDataBytes?: number;
}
