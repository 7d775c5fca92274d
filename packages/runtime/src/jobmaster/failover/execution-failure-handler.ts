import type { RestartBackoffTimeStrategy } from "../restart-backoff-time-strategy.js";
import type { RestartPipelinedRegionFailoverStrategy } from "./restart-pipelined-region-failover-strategy.js";
import type { SchedulingExecutionVertex } from "./scheduling-pipelined-region.js";
import type { SchedulingTopology } from "./scheduling-topology.js";
import { isUnrecoverableFailure } from "./unrecoverable-failure.js";

/** What to do about a failure (Flink's `FailureHandlingResult`). */
export type FailureHandlingResult =
  | { readonly canRestart: false }
  | {
      readonly canRestart: true;
      /** Restart every task (the job's status goes RESTARTING), not only some regions. */
      readonly globalFailure: boolean;
      /** The subtasks to restart, in topological order. */
      readonly verticesToRestart: readonly SchedulingExecutionVertex[];
    };

/**
 * Decides how the job reacts to a failure (Flink's `ExecutionFailureHandler`): an unrecoverable
 * failure ({@link isUnrecoverableFailure}) fails the job whatever the restart strategy, which is
 * not even told of it; else the restart strategy says whether it may restart at all; the
 * failover strategy which subtasks re-run —
 * the regions {@link RestartPipelinedRegionFailoverStrategy} finds, or every subtask (Flink's
 * `RestartAllFailoverStrategy`) when there is none.
 */
export class ExecutionFailureHandler {
  private readonly topology: SchedulingTopology;
  private readonly failoverStrategy: RestartPipelinedRegionFailoverStrategy | undefined;
  private readonly restartStrategy: RestartBackoffTimeStrategy;

  /** Without `failoverStrategy` every failure restarts the whole job. */
  constructor(
    topology: SchedulingTopology,
    failoverStrategy: RestartPipelinedRegionFailoverStrategy | undefined,
    restartStrategy: RestartBackoffTimeStrategy,
  ) {
    this.topology = topology;
    this.failoverStrategy = failoverStrategy;
    this.restartStrategy = restartStrategy;
  }

  /**
   * One failure of the subtasks `failed` (several when a lost TaskExecutor took them, or the
   * producers of partitions that were lost), counted once by the restart strategy.
   */
  getFailureHandlingResult(
    failed: readonly SchedulingExecutionVertex[],
    cause: Error,
  ): FailureHandlingResult {
    if (this.failoverStrategy === undefined) return this.getGlobalFailureHandlingResult(cause);
    if (isUnrecoverableFailure(cause)) return { canRestart: false };
    const strategy = this.failoverStrategy;
    this.restartStrategy.notifyFailure(cause);
    if (!this.restartStrategy.canRestart()) return { canRestart: false };
    const restart = new Set(
      failed.flatMap((vertex) => strategy.getTasksNeedingRestart(vertex, cause)),
    );
    return {
      canRestart: true,
      globalFailure: false,
      verticesToRestart: this.topology.vertices.filter((vertex) => restart.has(vertex)),
    };
  }

  /** A failure of the job as a whole (a deployment, placement or checkpoint failure). */
  getGlobalFailureHandlingResult(cause: Error): FailureHandlingResult {
    if (isUnrecoverableFailure(cause)) return { canRestart: false };
    this.restartStrategy.notifyFailure(cause);
    if (!this.restartStrategy.canRestart()) return { canRestart: false };
    return { canRestart: true, globalFailure: true, verticesToRestart: this.topology.vertices };
  }
}
