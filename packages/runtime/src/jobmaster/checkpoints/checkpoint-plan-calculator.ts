import type { TaskExecutorGateway } from "../../messages/task-executor-gateway.js";
import type { ExecutionVertex } from "../execution-vertex.js";
import type { JobGraph } from "../job-graph.js";
import type { CheckpointPlan, CheckpointTriggerTarget } from "./checkpoint-coordinator.js";
import type { TaskToWaitFor } from "./pending-checkpoint.js";

/**
 * The tasks of the next checkpoint, or why none can start now (Flink's
 * `DefaultCheckpointPlanCalculator`). `status` is the job's; only a RUNNING job checkpoints.
 *
 * Without `checkpointsAfterTasksFinish` every task must be running: the plan triggers the
 * sources and waits for every task. With it (FLIP-147), finished tasks no longer stop
 * checkpoints: the plan triggers every running task none of whose producers still runs (the
 * sources, and tasks whose input vertices all finished), waits for and notifies the running
 * tasks, and records the finished ones. A task that has not started yet (deploying,
 * initializing) still holds checkpoints back, as does a job whose tasks all finished.
 */
export function calculateCheckpointPlan(
  graph: JobGraph,
  status: string,
  executions: readonly ExecutionVertex[],
  checkpointsAfterTasksFinish = false,
): CheckpointPlan | string {
  if (status !== "RUNNING") return `job ${graph.name} is ${status}`;
  const notRunning = executions.find(
    (execution) =>
      execution.state !== "RUNNING" &&
      !(checkpointsAfterTasksFinish && execution.state === "FINISHED"),
  );
  if (notRunning !== undefined) return `${notRunning.name} is ${notRunning.state}`;
  const running = executions.filter((execution) => execution.state === "RUNNING");
  if (running.length === 0) return `every task of job ${graph.name} finished`;
  const vertexFinished = (vertex: ExecutionVertex["vertex"]) =>
    executions
      .filter((execution) => execution.vertex === vertex)
      .every((execution) => execution.state === "FINISHED");
  const toTrigger = running.filter((execution) =>
    graph.inputsOf(execution.vertex).every((edge) => vertexFinished(edge.source)),
  );
  const withoutTrigger = toTrigger.find(
    (execution) => execution.gateway.triggerCheckpoint === undefined,
  );
  if (withoutTrigger !== undefined) {
    // Only a task with inputs can lack it (sources are checked when deployed).
    return `${withoutTrigger.name} cannot be triggered: the TaskExecutorGateway of its task manager does not forward triggerCheckpoint`;
  }
  return {
    tasksToTrigger: toTrigger.map(
      (execution): CheckpointTriggerTarget => ({
        executionAttemptId: execution.attemptId,
        gateway: execution.gateway as Required<Pick<TaskExecutorGateway, "triggerCheckpoint">>,
        name: execution.name,
      }),
    ),
    tasksToWaitFor: running.map(taskToWaitFor),
    tasksToCommitTo: running.map((execution) => ({
      executionAttemptId: execution.attemptId,
      gateway: execution.gateway,
      name: execution.name,
    })),
    finishedTasks: executions
      .filter((execution) => execution.state === "FINISHED")
      .map(taskToWaitFor),
  };
}

function taskToWaitFor(execution: ExecutionVertex): TaskToWaitFor {
  return {
    executionAttemptId: execution.attemptId,
    vertexId: execution.vertex.id,
    vertexName: execution.vertex.name,
    subtaskIndex: execution.subtaskIndex,
  };
}
