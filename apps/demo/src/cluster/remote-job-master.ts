import type { IntermediateDataSetID, JobID, ResultPartitionID } from "@sluice/core";
import {
  describeThrowable,
  type JobMasterGateway,
  serializeThrowable,
  type TaskExecutionState,
  taskExecutionStateToJSON,
} from "@sluice/runtime";
import type { ExecutionState } from "@sluice/runtime-api";
import type { TaskProgress } from "../task-progress.js";
import type { JobManagerConnection } from "./connect-to-job-manager.js";

const TERMINAL: ReadonlySet<ExecutionState> = new Set(["FINISHED", "FAILED", "CANCELED"]);

/**
 * The job master as a task manager's tasks see it (Flink's `JobMasterGateway` over RPC): state
 * changes and producer-state questions become control-plane requests. A terminal state report
 * carries the task's final counters, so the job manager's summary has them even when the last
 * progress report is older than the task's end.
 */
export class RemoteJobMaster implements JobMasterGateway {
  constructor(
    private readonly connection: JobManagerConnection,
    private readonly finalProgress: (update: TaskExecutionState) => TaskProgress | undefined,
    private readonly onError: (message: string) => void,
  ) {}

  updateTaskExecutionState(update: TaskExecutionState): void {
    const progress = TERMINAL.has(update.state) ? this.finalProgress(update) : undefined;
    this.connection
      .call("updateTaskExecutionState", {
        ...taskExecutionStateToJSON(update),
        ...(progress === undefined ? {} : { progress }),
      })
      .catch((error: unknown) => {
        // The job manager then learns the task's end from this task manager's loss instead.
        this.onError(
          `could not report ${update.state} of ${update.executionAttemptId} to the job manager: ${describeThrowable(serializeThrowable(error))}`,
        );
      });
  }

  async requestPartitionProducerState(
    jobId: JobID,
    resultId: IntermediateDataSetID,
    partitionId: ResultPartitionID,
  ): Promise<ExecutionState> {
    const { state } = await this.connection.call("requestPartitionProducerState", {
      jobId: jobId.toString(),
      resultId: resultId.toString(),
      partitionId: partitionId.toString(),
    });
    return state;
  }
}
