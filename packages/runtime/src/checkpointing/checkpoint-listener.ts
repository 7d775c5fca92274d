/**
 * How a task's code learns what became of its checkpoints (Flink's CheckpointListener): it
 * registers one with `task.setCheckpointListener(listener)`. This is what an exactly-once sink is
 * built on: it prepares its output for a checkpoint when the checkpoint's snapshot is taken, and
 * makes it visible only once {@link notifyCheckpointComplete} says the whole job's checkpoint
 * completed (see `TwoPhaseCommitSink`).
 *
 * Notifications reach the task one at a time, in the order the job side sent them; the next one
 * waits until the promise of the previous one settled. A throw or a rejection fails the task, as
 * in Flink. Notifications are not guaranteed: one may be lost with a failed task manager or
 * connection, and a newer checkpoint's completion stands for the older ones (they are completed
 * or subsumed), so a listener commits everything up to the notified checkpoint.
 */
export interface CheckpointListener {
  /**
   * Checkpoint `checkpointId` completed: every task acknowledged it and its `_metadata` is
   * written, so the job restores it (or a newer one) after a failure.
   */
  notifyCheckpointComplete(checkpointId: bigint): void | Promise<void>;

  /**
   * Checkpoint `checkpointId` was aborted (declined, expired, subsumed by a newer one, or the job
   * failed over): nothing prepared for it is committed by it. Optional.
   */
  notifyCheckpointAborted?(checkpointId: bigint): void | Promise<void>;

  /**
   * Completed checkpoint `checkpointId` was subsumed: a newer checkpoint completed (the listener
   * was told before this) and the job no longer retains this one, so nothing restores it any
   * more (Flink's `notifyCheckpointSubsumed`): what was kept only for a restore from it may go.
   * Optional.
   */
  notifyCheckpointSubsumed?(checkpointId: bigint): void | Promise<void>;
}
