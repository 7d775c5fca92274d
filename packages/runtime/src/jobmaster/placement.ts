import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import type { JobVertex } from "./job-graph.js";

/** What a {@link Placement} knows when it is asked. */
export interface PlacementContext {
  /** 0 for the job's first deployment, n for the n-th restart. */
  readonly attemptNumber: number;
  /** Where the subtask's previous attempt ran (absent for the first deployment). */
  readonly previous?: TaskExecutorGateway;
  /**
   * True for a TaskExecutor the job was told is lost (`JobExecution.notifyTaskExecutorLost`):
   * it must not be returned again.
   */
  isLost(gateway: TaskExecutorGateway): boolean;
}

/**
 * Picks the TaskExecutor each subtask runs on (Flink's slot assignment). Called for every
 * subtask before anything is deployed, and again for every subtask before each restart — where
 * it may wait (return a Promise) until a replacement for a lost TaskExecutor has registered:
 *
 * ```ts
 * const placement: Placement = async (vertex, i, { isLost }) => {
 *   const executor = executors[i % executors.length];
 *   return isLost(executor) ? await cluster.replacementFor(executor) : executor;
 * };
 * ```
 *
 * Returning a lost TaskExecutor fails the job (IllegalStateError).
 */
export type Placement = (
  vertex: JobVertex,
  subtaskIndex: number,
  context: PlacementContext,
) => TaskExecutorGateway | Promise<TaskExecutorGateway>;
