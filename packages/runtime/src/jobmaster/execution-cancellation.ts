import { ErrorCodes, isSluiceError } from "@sluice/core";
import { isTerminal } from "../messages/task-execution-state.js";
import type { ExecutionVertex } from "./execution-vertex.js";

/**
 * Cancels the current attempt of `execution` on its TaskExecutor (Flink's
 * `Execution.cancel`). When the TaskExecutor refuses or cannot be reached, the attempt is marked
 * CANCELED (the task was never there) or FAILED (no report can come) and `onEnded` is called.
 */
export function cancelExecution(execution: ExecutionVertex, onEnded: () => void): void {
  const attemptId = execution.attemptId;
  execution.gateway.cancelTask(attemptId).catch((error: unknown) => {
    // A task that ended sent its final report before this reply, so a task still not
    // terminal here never ran there; one whose TaskExecutor cannot be reached cannot report.
    // Either way the job must not wait for it.
    if (!execution.attemptId.equals(attemptId) || isTerminal(execution.state)) return;
    execution.state = isSluiceError(error, ErrorCodes.TASK_NOT_FOUND) ? "CANCELED" : "FAILED";
    onEnded();
  });
}

/**
 * Cancels those of `tasks` that have not ended: one never deployed is CANCELED at once, one
 * whose deployment is in flight (`isSubmitting`) is left to its deployment, which cancels it
 * once the TaskExecutor accepted it; the others through {@link cancelExecution}.
 */
export function cancelExecutions(
  tasks: readonly ExecutionVertex[],
  isSubmitting: (execution: ExecutionVertex) => boolean,
  onEnded: () => void,
): void {
  for (const execution of tasks) {
    if (isTerminal(execution.state)) continue;
    if (execution.state === "CREATED") {
      execution.state = "CANCELED";
      continue;
    }
    // Its deployment is in flight and the task may not exist there yet: `deploy` cancels it
    // once the TaskExecutor accepted it.
    if (isSubmitting(execution)) continue;
    cancelExecution(execution, onEnded);
  }
}
