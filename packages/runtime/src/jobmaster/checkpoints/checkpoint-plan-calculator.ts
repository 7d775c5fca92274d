import type { TaskExecutorGateway } from "../../messages/task-executor-gateway.js";
import type { ExecutionVertex } from "../execution-vertex.js";
import { consumedPartitionsOf, type JobEdge, type JobGraph, type JobVertex } from "../job-graph.js";
import type { CheckpointPlan, CheckpointTriggerTarget } from "./checkpoint-coordinator.js";
import type { TaskToWaitFor } from "./pending-checkpoint.js";

/**
 * The tasks of the next checkpoint, or why none can start now (Flink's
 * `DefaultCheckpointPlanCalculator`). `status` is the job's; only a RUNNING job checkpoints,
 * and only while every subtask is RUNNING or (with `checkpointsAfterTasksFinish`) FINISHED: a
 * subtask that has not started yet, or is being canceled, holds checkpoints back.
 *
 * The plan is decided per subtask, in topological order (FLIP-147): every running subtask is
 * waited for and notified, every finished one recorded as finished (a restore deploys it
 * finished), and a running subtask is triggered when none of the subtasks it reads still runs.
 * Over an ALL_TO_ALL edge a subtask reads every producer subtask; over a POINTWISE edge (FORWARD,
 * RESCALE) only its own share of them ({@link consumedPartitionsOf}), so a consumer whose
 * producers finished is triggered while its siblings' producers still run. With every subtask
 * running that is the sources only. A subtask is FINISHED only once its consumers read all its
 * records (see the all-records-processed handshake in `Task`), so a triggered subtask has no
 * record of a finished producer left to read.
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
  const subtasks = subtasksByVertex(executions);
  const tasksToTrigger: ExecutionVertex[] = [];
  const running: ExecutionVertex[] = [];
  const finished: ExecutionVertex[] = [];
  for (const vertex of graph.topologicalOrder()) {
    const own = subtasks.get(vertex) ?? [];
    const inputs = graph.inputsOf(vertex);
    // Decided for the whole vertex first (Flink's `someTasksMustBeTriggered`): none of its
    // subtasks is triggered while an ALL_TO_ALL producer subtask, or every POINTWISE one, runs.
    const mayTrigger = inputs.every((edge) => !hasActiveUpstreamVertex(edge, subtasks));
    for (const execution of own) {
      if (execution.state === "FINISHED") {
        finished.push(execution);
        continue;
      }
      running.push(execution);
      if (mayTrigger && !hasRunningPrecedentTasks(execution, inputs, subtasks)) {
        tasksToTrigger.push(execution);
      }
    }
  }
  if (running.length === 0) return `every task of job ${graph.name} finished`;
  const withoutTrigger = tasksToTrigger.find(
    (execution) => execution.gateway.triggerCheckpoint === undefined,
  );
  if (withoutTrigger !== undefined) {
    // Only a task with inputs can lack it (sources are checked when deployed).
    return `${withoutTrigger.name} cannot be triggered: the TaskExecutorGateway of its task manager does not forward triggerCheckpoint`;
  }
  return {
    tasksToTrigger: tasksToTrigger.map(
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
    finishedTasks: finished.map(taskToWaitFor),
    vertices: graph.vertices.map((vertex) => ({
      vertexId: vertex.id,
      vertexName: vertex.name,
      parallelism: vertex.parallelism,
      maxParallelism: vertex.maxParallelism,
    })),
  };
}

/** The subtasks of each vertex, by subtask index. */
function subtasksByVertex(
  executions: readonly ExecutionVertex[],
): Map<JobVertex, ExecutionVertex[]> {
  const byVertex = new Map<JobVertex, ExecutionVertex[]>();
  for (const execution of executions) {
    const list = byVertex.get(execution.vertex) ?? [];
    list[execution.subtaskIndex] = execution;
    byVertex.set(execution.vertex, list);
  }
  return byVertex;
}

/**
 * Whether every subtask of `edge`'s target reads some running producer subtask through it: over
 * ALL_TO_ALL as soon as one producer subtask runs, over POINTWISE only while all of them run.
 */
function hasActiveUpstreamVertex(
  edge: JobEdge,
  subtasks: ReadonlyMap<JobVertex, readonly ExecutionVertex[]>,
): boolean {
  const producers = subtasks.get(edge.source) ?? [];
  const runningProducers = producers.filter((producer) => producer.state !== "FINISHED").length;
  return edge.distributionPattern === "ALL_TO_ALL"
    ? runningProducers > 0
    : runningProducers === producers.length;
}

/**
 * Whether `execution` reads a running producer subtask over one of its POINTWISE inputs (its
 * ALL_TO_ALL producers all finished, or its vertex would not be considered).
 */
function hasRunningPrecedentTasks(
  execution: ExecutionVertex,
  inputs: readonly JobEdge[],
  subtasks: ReadonlyMap<JobVertex, readonly ExecutionVertex[]>,
): boolean {
  for (const edge of inputs) {
    if (edge.distributionPattern !== "POINTWISE") continue;
    const producers = subtasks.get(edge.source) ?? [];
    for (const index of consumedPartitionsOf(edge, execution.subtaskIndex).producers) {
      if (producers[index]?.state !== "FINISHED") return true;
    }
  }
  return false;
}

function taskToWaitFor(execution: ExecutionVertex): TaskToWaitFor {
  return {
    executionAttemptId: execution.attemptId,
    vertexId: execution.vertex.id,
    vertexName: execution.vertex.name,
    subtaskIndex: execution.subtaskIndex,
  };
}
