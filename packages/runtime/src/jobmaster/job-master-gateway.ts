import type { IntermediateDataSetID, JobID, ResultPartitionID } from "@sluice/core";
import type { ExecutionState } from "@sluice/runtime-api";
import type { TaskExecutionState } from "../taskexecutor/task-execution-state.js";

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
}
