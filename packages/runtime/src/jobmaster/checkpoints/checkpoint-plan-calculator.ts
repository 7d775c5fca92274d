import type { TaskExecutorGateway } from "../../messages/task-executor-gateway.js";
import type { ExecutionVertex } from "../execution-vertex.js";
import type { JobGraph } from "../job-graph.js";
import type { CheckpointPlan } from "./checkpoint-coordinator.js";

/**
 * Every running source to trigger and every task to wait for, or why no checkpoint can start
 * now (Flink's `DefaultCheckpointPlanCalculator`, for a job whose tasks must all be running).
 * `status` is the job's; only a RUNNING job checkpoints.
 */
export function calculateCheckpointPlan(
  graph: JobGraph,
  status: string,
  executions: readonly ExecutionVertex[],
): CheckpointPlan | string {
  if (status !== "RUNNING") return `job ${graph.name} is ${status}`;
  const notRunning = executions.find((execution) => execution.state !== "RUNNING");
  if (notRunning !== undefined) return `${notRunning.name} is ${notRunning.state}`;
  return {
    tasksToTrigger: executions
      .filter((execution) => graph.inputsOf(execution.vertex).length === 0)
      .map((execution) => ({
        executionAttemptId: execution.attemptId,
        // Checked when the source was deployed.
        gateway: execution.gateway as Required<Pick<TaskExecutorGateway, "triggerCheckpoint">>,
        name: execution.name,
      })),
    tasksToWaitFor: executions.map((execution) => ({
      executionAttemptId: execution.attemptId,
      vertexId: execution.vertex.id,
      vertexName: execution.vertex.name,
      subtaskIndex: execution.subtaskIndex,
    })),
  };
}
