import type { IntermediateDataSetID, JobID, ResultPartitionID } from "@sluice/core";
import type { ExecutionState } from "@sluice/runtime-api";
import type { AcknowledgeCheckpoint } from "./acknowledge-checkpoint.js";
import type { DeclineCheckpoint } from "./decline-checkpoint.js";
import type { TaskExecutionState } from "./task-execution-state.js";

/**
 * What a TaskExecutor calls on the job side for the tasks of one job (Flink's `JobMasterGateway`,
 * the part tasks use). In one process it is the `JobExecution` itself; across processes the
 * control plane implements it by sending messages.
 */
export interface JobMasterGateway {
  /** A task changed state (RUNNING, FINISHED, FAILED, CANCELED). Must not throw. */
  updateTaskExecutionState(update: TaskExecutionState): void;

  /**
   * The state of the producer of `partitionId` (Flink's `requestPartitionState`), asked by an
   * input channel whose partition request keeps failing with "partition not found".
   */
  requestPartitionProducerState(
    jobId: JobID,
    resultId: IntermediateDataSetID,
    partitionId: ResultPartitionID,
  ): Promise<ExecutionState>;

  /**
   * A task took its part of a checkpoint: its snapshot is written (Flink's
   * `acknowledgeCheckpoint`). Sent after the task's barrier went downstream, and before the
   * task reports FINISHED (a control plane must keep that order). Must not throw; an
   * acknowledgement of an unknown or ended checkpoint is discarded with its snapshot.
   *
   * Required, with {@link declineCheckpoint}, for the tasks of a job that takes checkpoints (a
   * TaskExecutor refuses to deploy such a task with a gateway without them).
   */
  acknowledgeCheckpoint?(ack: AcknowledgeCheckpoint): void;

  /**
   * A task will not take part in a checkpoint (Flink's `declineCheckpoint`): the job side aborts
   * it. Must not throw.
   */
  declineCheckpoint?(decline: DeclineCheckpoint): void;
}
