import type { CheckpointBarrier } from "@sluice/core";
import type { CheckpointFailureReason } from "../../messages/checkpoint-failure-reason.js";
import type { CheckpointMetrics } from "../../messages/checkpoint-metrics.js";
import type { CheckpointableTask } from "../checkpointable-task.js";

/**
 * Records what a barrier handler tells the task (like Flink's ValidatingCheckpointHandler):
 * triggered ids with their metrics, aborted ids with their reasons, in order, and the unaligned
 * checkpoints whose input became complete.
 */
export class ValidatingCheckpointableTask implements CheckpointableTask {
  readonly triggered: bigint[] = [];
  /** The barriers triggered with, to tell aligned from unaligned checkpoints. */
  readonly triggeredBarriers: CheckpointBarrier[] = [];
  /** Unaligned checkpoints whose barriers all arrived (their in-flight input is complete). */
  readonly inputsComplete: bigint[] = [];
  readonly metrics: CheckpointMetrics[] = [];
  readonly aborted: bigint[] = [];
  readonly reasons: CheckpointFailureReason[] = [];
  /** Triggers (positive ids) and aborts (negative ids) in order, as Flink's sequence validator. */
  readonly sequence: number[] = [];
  /** When set, a trigger of any other id fails (Flink's nextExpectedCheckpointId). */
  nextExpectedCheckpointId: bigint | undefined;

  triggerCheckpointOnBarrier(barrier: CheckpointBarrier, metrics: CheckpointMetrics): void {
    if (
      this.nextExpectedCheckpointId !== undefined &&
      barrier.id !== this.nextExpectedCheckpointId
    ) {
      throw new Error(`triggered ${barrier.id}, expected ${this.nextExpectedCheckpointId}`);
    }
    if (this.nextExpectedCheckpointId !== undefined) this.nextExpectedCheckpointId++;
    this.triggered.push(barrier.id);
    this.triggeredBarriers.push(barrier);
    this.metrics.push(metrics);
    this.sequence.push(Number(barrier.id));
  }

  abortCheckpointOnBarrier(checkpointId: bigint, reason: CheckpointFailureReason): void {
    this.aborted.push(checkpointId);
    this.reasons.push(reason);
    this.sequence.push(-Number(checkpointId));
  }

  allBarriersReceived(checkpointId: bigint): void {
    this.inputsComplete.push(checkpointId);
  }

  get lastCanceledCheckpointId(): bigint | undefined {
    return this.aborted[this.aborted.length - 1];
  }

  get lastReason(): CheckpointFailureReason | undefined {
    return this.reasons[this.reasons.length - 1];
  }
}
