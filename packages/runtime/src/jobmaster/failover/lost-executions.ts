import { isTerminal } from "../../messages/task-execution-state.js";
import type { TaskExecutorGateway } from "../../messages/task-executor-gateway.js";
import type { ExecutionVertex } from "../execution-vertex.js";

/**
 * Marks FAILED with `cause` the attempts a lost TaskExecutor (`gateway`) took with it, and
 * returns those a failover must handle: not the ones a running failover restarts already
 * (`isRestarting`). While the job runs, a subtask placed there but not deployed yet is not lost:
 * it is placed again when its region is scheduled.
 */
export function executionsLostWith(
  gateway: TaskExecutorGateway,
  executions: readonly ExecutionVertex[],
  jobRunning: boolean,
  cause: Error,
  isRestarting: (execution: ExecutionVertex) => boolean,
): ExecutionVertex[] {
  const failed: ExecutionVertex[] = [];
  for (const execution of executions) {
    if (execution.gateway !== gateway || isTerminal(execution.state)) continue;
    if (execution.state === "CREATED" && jobRunning) continue;
    execution.state = "FAILED";
    execution.failureCause = cause;
    if (!isRestarting(execution)) failed.push(execution);
  }
  return failed;
}
