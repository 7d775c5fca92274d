import type { CheckpointBarrier } from "@sluice/core";
import type { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import type { CheckpointMetrics } from "../messages/checkpoint-metrics.js";

/**
 * The task a barrier handler reports to (Flink's CheckpointableTask). Both calls happen
 * synchronously while the task polls its input, so the task snapshots its state exactly between
 * the records before and after the barrier. Errors thrown here propagate to the poll.
 */
export interface CheckpointableTask {
  /**
   * Every open channel delivered the barrier of this checkpoint (or ended): snapshot the task's
   * state now and forward the barrier downstream. Called at most once per checkpoint id, in
   * increasing id order.
   */
  triggerCheckpointOnBarrier(barrier: CheckpointBarrier, metrics: CheckpointMetrics): void;
  /**
   * The checkpoint will not complete at this task: decline it and tell downstream tasks (Flink
   * forwards a CancelCheckpointMarker). Called at most once per checkpoint id.
   */
  abortCheckpointOnBarrier(checkpointId: bigint, reason: CheckpointFailureReason): void;
  /**
   * Unaligned checkpoint `checkpointId` (triggered at its first barrier) got the barrier of every
   * open channel, or they ended: the in-flight input to persist is complete.
   */
  allBarriersReceived?(checkpointId: bigint): void;
}
