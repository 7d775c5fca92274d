import type { ExecutionAttemptID } from "@sluice/core";
import type { ExecutionState, JsonValue } from "@sluice/runtime-api";
import type { TaskSerializers } from "../messages/task-execution-state.js";
import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import type { CompletedCheckpoint } from "./checkpoints/completed-checkpoint.js";
import type { JobVertex } from "./job-graph.js";

/**
 * One subtask of the job and where it stands (Flink's `ExecutionVertex` + its current
 * `Execution`). A restart gives it a new attempt, possibly on another TaskExecutor.
 */
export interface ExecutionVertex {
  readonly vertex: JobVertex;
  readonly subtaskIndex: number;
  /** The current attempt (its attempt number counts the job's restarts). */
  attemptId: ExecutionAttemptID;
  /** Where the current attempt runs. */
  gateway: TaskExecutorGateway;
  /** The task name Flink prints, `Name (i/n)#attempt`. */
  name: string;
  /** The last state the task reported (or the job side decided). */
  state: ExecutionState;
  /** What the task's invokable returned, once FINISHED. */
  result?: JsonValue;
  /** Why the task failed or was canceled, as it reported. */
  failureCause?: Error;
  /** The serializers the current attempt resolved, once it reported them. */
  serializers?: TaskSerializers;
  /**
   * The checkpoint (or savepoint) the next deployment of this subtask restores: the one the job
   * started from, or the latest completed one when a global or regional failover restarted it.
   */
  restoreFrom?: CompletedCheckpoint;
}
