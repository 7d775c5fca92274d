import { ErrorCodes, isSluiceError } from "@sluice/core";
import { isTerminal } from "../../messages/task-execution-state.js";
import { asError } from "../../util/as-error.js";
import type { ExecutionVertex } from "../execution-vertex.js";
import type { JobMasterPartitionTracker } from "../job-master-partition-tracker.js";
import type { JobStatus } from "../job-status.js";
import type { PipelinedRegionSchedulingStrategy } from "../pipelined-region-scheduling-strategy.js";
import type { RestartBackoffTimeStrategy } from "../restart-backoff-time-strategy.js";
import type { RegionPartitionGroupReleaseStrategy } from "./region-partition-group-release-strategy.js";
import type { SchedulingExecutionVertex } from "./scheduling-pipelined-region.js";
import type { SchedulingTopology } from "./scheduling-topology.js";
import { isUnrecoverableFailure } from "./unrecoverable-failure.js";

/** What the {@link TaskRestarter} needs of its job. */
export interface TaskRestarterContext {
  /** The job's status now. */
  readonly status: JobStatus;
  /** Every subtask of the job. */
  readonly executionVertices: readonly ExecutionVertex[];
  /** The subtask a scheduling vertex stands for. */
  executionOf(vertex: SchedulingExecutionVertex): ExecutionVertex;
  /** Cancels those of `tasks` that have not ended. */
  cancelExecutions(tasks: readonly ExecutionVertex[]): void;
  /** Asks the placement for the next attempts of `tasks`. */
  placeExecutions(tasks: readonly ExecutionVertex[]): Promise<void>;
  /** The job's partitions. */
  readonly partitions: JobMasterPartitionTracker;
  /** Releases every tracked partition, once the deployments in flight are done. */
  releaseAllPartitions(): Promise<void>;
  /** Deploys what is ready. */
  schedule(): Promise<void>;
  /** Ends the job as FAILED with `cause`. */
  fail(cause: Error): void;
  /** The job goes RESTARTING for a global failover (checkpoints stop). */
  beginGlobalRestart(cause: Error): void;
  /** The global failover's attempts are placed: the job runs again (restored, checkpointing). */
  completeGlobalRestart(): void;
  /**
   * A region failover takes `tasks` (Flink's `restoreState` for a regional recovery begins): the
   * pending checkpoints are aborted, since the canceled attempts will not complete them.
   */
  beginRegionalRestart(tasks: readonly ExecutionVertex[]): void;
  /**
   * The next attempts of `tasks` are placed: they restore the latest completed checkpoint (a job
   * with checkpoints), while the rest of the job runs on.
   */
  restoreRegions(tasks: readonly ExecutionVertex[]): void;
}

/**
 * Restarts subtasks after a failure (the restart part of Flink's `DefaultScheduler`, with its
 * `ExecutionVertexVersioner`): every failover takes its subtasks with a new version, so a
 * deployment or an older failover of them still in flight stops; it cancels them, waits until
 * each ended, releases their partitions, waits the restart strategy's delay, places them again
 * and lets the scheduler deploy them as their next attempts.
 */
export class TaskRestarter {
  private readonly context: TaskRestarterContext;
  private readonly topology: SchedulingTopology;
  private readonly scheduler: PipelinedRegionSchedulingStrategy;
  private readonly releaseStrategy: RegionPartitionGroupReleaseStrategy;
  private readonly restartStrategy: RestartBackoffTimeStrategy;
  private readonly versions = new Map<ExecutionVertex, number>();
  /** The subtasks a region failover is restarting, by the version it took them at. */
  private readonly restarting = new Map<ExecutionVertex, number>();
  private readonly rerun = new Set<ExecutionVertex>();
  private readonly terminalWaiters: { tasks: readonly ExecutionVertex[]; wake: () => void }[] = [];
  private readonly delays = new Map<NodeJS.Timeout, () => void>();
  private pendingRegionRestarts = 0;
  /** How often the job failed over. */
  restarts = 0;

  constructor(
    context: TaskRestarterContext,
    topology: SchedulingTopology,
    scheduler: PipelinedRegionSchedulingStrategy,
    releaseStrategy: RegionPartitionGroupReleaseStrategy,
    restartStrategy: RestartBackoffTimeStrategy,
  ) {
    this.context = context;
    this.topology = topology;
    this.scheduler = scheduler;
    this.releaseStrategy = releaseStrategy;
    this.restartStrategy = restartStrategy;
  }

  /** The subtask's version: bumped by every failover that takes it. */
  versionOf(execution: ExecutionVertex): number {
    return this.versions.get(execution) ?? 0;
  }

  /** Whether a region failover is restarting the subtask (its reports are expected then). */
  isRestarting(execution: ExecutionVertex): boolean {
    return this.restarting.get(execution) === this.versionOf(execution);
  }

  /** Whether a region failover has not deployed its subtasks yet (the job is not done). */
  get hasPendingRestarts(): boolean {
    return this.pendingRegionRestarts > 0;
  }

  /** The subtasks a failover restarted, in the job's order. */
  get rerunExecutions(): ExecutionVertex[] {
    return this.context.executionVertices.filter((execution) => this.rerun.has(execution));
  }

  /** A task's state changed, or the job stops (`stopping`): wakes the failovers waiting for it. */
  onStateChanged(stopping: boolean): void {
    for (const waiter of [...this.terminalWaiters]) {
      if (!stopping && !waiter.tasks.every((execution) => isTerminal(execution.state))) continue;
      this.terminalWaiters.splice(this.terminalWaiters.indexOf(waiter), 1);
      waiter.wake();
    }
  }

  /** The job stops: failovers waiting for a delay give up. */
  stop(): void {
    for (const [timer, wake] of this.delays) {
      clearTimeout(timer);
      wake();
    }
    this.delays.clear();
    this.onStateChanged(true);
  }

  /**
   * Flink's region failover: cancel the subtasks of the regions to restart that were scheduled
   * and wait for them to end, release their partitions, wait the strategy's delay, then place
   * them again, restored from the latest completed checkpoint when the job takes checkpoints;
   * the scheduler deploys them once their inputs are ready. Regions not scheduled yet are left
   * alone: they are deployed when their inputs are ready.
   */
  async restartRegions(vertices: readonly SchedulingExecutionVertex[]): Promise<void> {
    const { context } = this;
    const tasks = vertices
      .filter((vertex) => this.scheduler.isScheduled(this.topology.regionOf(vertex)))
      .map((vertex) => context.executionOf(vertex));
    if (tasks.length === 0) return;
    this.restarts++;
    this.pendingRegionRestarts++;
    try {
      this.takeForRestart(tasks);
      context.beginRegionalRestart(tasks);
      const taken = new Map(tasks.map((execution) => [execution, this.versionOf(execution)]));
      for (const [execution, version] of taken) this.restarting.set(execution, version);
      const stillOurs = () => tasks.filter((e) => this.versionOf(e) === taken.get(e));
      // Not available from now on, so nothing that reads them is scheduled meanwhile.
      const released = context.partitions.stopTrackingPartitionsOf(tasks);
      context.cancelExecutions(tasks);
      await this.whenTerminal(tasks);
      // Released even when the job stops meanwhile: they are no longer tracked for its end.
      context.partitions.releaseInBackground(released);
      if (context.status !== "RUNNING") return;
      if (!(await this.placeAfterBackoff(stillOurs, "RUNNING"))) return;
      const placed = stillOurs();
      for (const execution of placed) this.restarting.delete(execution);
      context.restoreRegions(placed);
      this.scheduler.restartScheduling(
        new Set(placed.map(({ vertex, subtaskIndex }) => this.regionOf(vertex, subtaskIndex))),
      );
      await context.schedule();
    } finally {
      this.pendingRegionRestarts--;
    }
  }

  /**
   * Flink's global failover: cancel every task and wait for all to end, release every partition,
   * wait the strategy's delay, then place and deploy every subtask as its next attempt.
   */
  async restartGlobally(cause: Error): Promise<void> {
    const { context } = this;
    this.restarts++;
    context.beginGlobalRestart(cause);
    const all = context.executionVertices;
    this.takeForRestart(all);
    this.restarting.clear();
    context.cancelExecutions(all);
    await this.whenTerminal(all);
    if (context.status !== "RESTARTING") return;
    await context.releaseAllPartitions();
    if (!(await this.placeAfterBackoff(() => all, "RESTARTING"))) return;
    this.scheduler.restartScheduling();
    context.completeGlobalRestart();
    await context.schedule();
  }

  private regionOf(vertex: ExecutionVertex["vertex"], subtaskIndex: number) {
    return this.topology.regionOf(this.topology.executionVertex(vertex, subtaskIndex));
  }

  /**
   * Takes `tasks` for a failover: newer than any deployment or restart of them in flight, and
   * counted as re-run (each gets a new attempt).
   */
  private takeForRestart(tasks: readonly ExecutionVertex[]): void {
    for (const execution of tasks) {
      this.versions.set(execution, this.versionOf(execution) + 1);
      this.rerun.add(execution);
      const { vertex, subtaskIndex } = execution;
      this.releaseStrategy.vertexUnfinished(this.topology.executionVertex(vertex, subtaskIndex));
    }
  }

  /**
   * Waits the restart strategy's delay, then asks the placement for the next attempts of
   * `tasks()`; a placement that fails counts as a failure and is retried while the strategy
   * allows. False when the job left `status` meanwhile or failed.
   */
  private async placeAfterBackoff(
    tasks: () => readonly ExecutionVertex[],
    status: JobStatus,
  ): Promise<boolean> {
    const { context } = this;
    for (;;) {
      await this.delay(this.restartStrategy.getBackoffTime());
      if (context.status !== status) return false;
      const targets = tasks();
      if (targets.length === 0) return false;
      try {
        await context.placeExecutions(targets);
        return context.status === status;
      } catch (error) {
        if (context.status !== status) return false;
        // A placement that put a task on a lost TaskExecutor is a bug of the caller: no retry;
        // nor for a configuration error, which every retry would meet again.
        const retriable =
          !isSluiceError(error, ErrorCodes.ILLEGAL_STATE) && !isUnrecoverableFailure(error);
        this.restartStrategy.notifyFailure(asError(error));
        if (!retriable || !this.restartStrategy.canRestart()) {
          context.fail(asError(error));
          return false;
        }
      }
    }
  }

  /** Resolves after `ms`, or at once when the job stops. */
  private delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.delays.delete(timer);
        resolve();
      }, ms);
      this.delays.set(timer, resolve);
    });
  }

  /** Resolves once every one of `tasks` ended, or the job stops. */
  private whenTerminal(tasks: readonly ExecutionVertex[]): Promise<void> {
    return new Promise((wake) => {
      this.terminalWaiters.push({ tasks, wake });
      this.onStateChanged(
        this.context.status !== "RUNNING" && this.context.status !== "RESTARTING",
      );
    });
  }
}
