import type { ExecutionAttemptID, JobID } from "@sluice/core";
import type { ExecutionState } from "@sluice/runtime-api";
import type { TaskExecutionState } from "../messages/task-execution-state.js";

/**
 * A task deployed on a TaskExecutor that has not ended, wherever it runs: a `Task` of the
 * TaskExecutor's own event loop, or a task on one of its slot threads
 * (`taskmanager.task-slots.mode: threaded`), seen from the main thread.
 */
export interface RunningTask {
  /** The job. */
  readonly jobId: JobID;
  /** The execution attempt. */
  readonly executionAttemptId: ExecutionAttemptID;
  /** The name Flink prints: `Count (1/2)#0`. */
  readonly name: string;
  /** The state it last reported. */
  readonly state: ExecutionState;
  /** Resolves with its last state (FINISHED, FAILED or CANCELED). */
  readonly terminated: Promise<TaskExecutionState>;
}
