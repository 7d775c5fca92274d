import {
  CancelledError,
  deferred,
  ErrorCodes,
  IllegalStateError,
  type IntermediateDataSetID,
  isSluiceError,
  type JobID,
  PartitionNotFoundError,
  type ResultPartitionID,
} from "@sluice/core";
import type { ExecutionState, ShuffleMaster } from "@sluice/runtime-api";
import { CheckpointError } from "../checkpointing/checkpoint-error.js";
import type { AcknowledgeCheckpoint } from "../messages/acknowledge-checkpoint.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import type { DeclineCheckpoint } from "../messages/decline-checkpoint.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import { deserializeThrowable } from "../messages/serialized-throwable.js";
import type { TaskExecutionState } from "../messages/task-execution-state.js";
import { isTerminal } from "../messages/task-execution-state.js";
import type {
  TaskExecutorGateway,
  TaskManagerLocation,
} from "../messages/task-executor-gateway.js";
import { asError } from "../util/as-error.js";
import { CheckpointCoordinator } from "./checkpoints/checkpoint-coordinator.js";
import type { CheckpointCoordinatorConfiguration } from "./checkpoints/checkpoint-coordinator-configuration.js";
import { calculateCheckpointPlan } from "./checkpoints/checkpoint-plan-calculator.js";
import type { CompletedCheckpoint } from "./checkpoints/completed-checkpoint.js";
import { ExecutionGraph } from "./execution-graph.js";
import type { ExecutionVertex } from "./execution-vertex.js";
import type { JobGraph, JobVertex } from "./job-graph.js";
import { JobMasterPartitionTracker } from "./job-master-partition-tracker.js";
import { type JobResult, jobResultOf } from "./job-result.js";
import type { JobStatus, JobStatusListener } from "./job-status.js";
import {
  type DeploymentOrder,
  PipelinedRegionSchedulingStrategy,
} from "./pipelined-region-scheduling-strategy.js";
import type { Placement, PlacementContext } from "./placement.js";
import type { RestartBackoffTimeStrategy } from "./restart-backoff-time-strategy.js";
import { serializerMismatchOf } from "./serializer-compatibility.js";
import { TaskDeploymentDescriptorFactory } from "./task-deployment-descriptor-factory.js";

/** How a job checkpoints and recovers; what {@link JobDeployer} reads from the configuration. */
export interface JobExecutionOptions {
  /** Present when the job takes checkpoints (`execution.checkpointing.interval` is set). */
  readonly checkpointing?: CheckpointCoordinatorConfiguration;
  /** Whether and when a failed job restarts (`restart-strategy.*`). */
  readonly restartStrategy: RestartBackoffTimeStrategy;
  /** Told of each status change of the job, with the failure behind FAILING or RESTARTING. */
  readonly statusListener?: JobStatusListener;
  /**
   * A checkpoint of an earlier run of this job (another job manager's, after a failover): the
   * first deployment restores it, and checkpoint ids continue after it.
   */
  readonly restoreFrom?: CompletedCheckpoint;
}

/**
 * One running job on the job side (Flink's `JobMaster` with its scheduler, for one attempt of the
 * job): it deploys the job's subtasks onto TaskExecutors as their inputs become ready, registers
 * their partitions with the ShuffleMaster, answers their producer-state questions, follows their
 * state reports, fails the job (canceling every other task) when one fails, and releases every
 * partition when the job ends. It is the {@link JobMasterGateway} its tasks report to.
 *
 * It keeps the job's status and failover; which vertices are deployed when is decided by Flink's
 * pipelined-region scheduling strategy, what a subtask is deployed with by a task deployment
 * descriptor factory, and a partition tracker keeps the partitions, which live until the job
 * ends; then each worker that holds some (`storesLocalResourcesOn`) is told to release them.
 *
 * With checkpointing on, its {@link CheckpointCoordinator} triggers checkpoints at the sources.
 * When a task fails or a TaskExecutor is lost and the restart strategy allows it, the job
 * restarts globally (Flink's full failover): it cancels every task, waits for all to end,
 * releases their partitions, waits the strategy's delay, asks the placement again for every
 * subtask, and deploys every task as the next attempt, restored from the newest completed
 * checkpoint.
 */
export class JobExecution implements JobMasterGateway {
  /** The job. */
  readonly jobId: JobID;
  /** The deployed graph. */
  readonly graph: JobGraph;
  /** Resolves once every task ended and the job's partitions were released. */
  readonly terminated: Promise<JobResult>;
  /** Triggers and collects the job's checkpoints; `undefined` when it takes none. */
  readonly checkpointCoordinator: CheckpointCoordinator | undefined;

  private readonly master: ShuffleMaster;
  private readonly placement: Placement;
  private readonly checkpointing: CheckpointCoordinatorConfiguration | undefined;
  private readonly restartStrategy: RestartBackoffTimeStrategy;
  private readonly statusListener: JobStatusListener | undefined;
  private readonly executions: ExecutionGraph;
  private readonly scheduler: PipelinedRegionSchedulingStrategy;
  private readonly descriptors: TaskDeploymentDescriptorFactory;
  private readonly partitions: JobMasterPartitionTracker;
  private readonly lostGateways = new Set<TaskExecutorGateway>();
  /** Executions whose `submitTask` has not answered yet. */
  private readonly submitting = new Set<ExecutionVertex>();
  private readonly releaseErrors: Error[] = [];
  private currentStatus: JobStatus = "CREATED";
  private rootCause: Error | undefined;
  /** The root cause's task, by its name and location when it failed (a restart renames it). */
  private failedTaskName: string | undefined;
  private failedTaskLocation: TaskManagerLocation | undefined;
  private scheduling: Promise<void> = Promise.resolve();
  private readonly termination = deferred<JobResult>();
  /** The attempt number of every current execution (the number of restarts so far). */
  private attemptNumber = 0;
  private restoredFrom: CompletedCheckpoint | undefined;
  /** When (ms since the epoch) the last restart restored {@link restoredFrom}. */
  private restoredAt: number | undefined;
  /** Wakes the restart when every task of the failed attempt ended, or the job is stopped. */
  private wakeRestart: (() => void) | undefined;
  private restartDelay: NodeJS.Timeout | undefined;
  private terminating = false;

  constructor(
    graph: JobGraph,
    master: ShuffleMaster,
    placement: Placement,
    order: DeploymentOrder,
    options: JobExecutionOptions,
  ) {
    this.descriptors = new TaskDeploymentDescriptorFactory(graph, options.checkpointing);
    this.graph = graph;
    this.executions = new ExecutionGraph(graph);
    this.jobId = graph.jobId;
    this.master = master;
    this.placement = placement;
    this.scheduler = new PipelinedRegionSchedulingStrategy(graph, order, (vertex) =>
      this.subtasksOf(vertex).every((producer) => producer.state === "FINISHED"),
    );
    this.partitions = new JobMasterPartitionTracker(graph.jobId, master);
    this.checkpointing = options.checkpointing;
    this.restartStrategy = options.restartStrategy;
    this.statusListener = options.statusListener;
    this.terminated = this.termination.promise;
    this.checkpointCoordinator =
      options.checkpointing === undefined
        ? undefined
        : new CheckpointCoordinator({
            jobId: this.jobId,
            configuration: options.checkpointing,
            calculateCheckpointPlan: () =>
              calculateCheckpointPlan(
                this.graph,
                this.currentStatus,
                this.executionVertices,
                options.checkpointing?.checkpointsAfterTasksFinish,
              ),
            onTolerableFailuresExceeded: (cause) => this.failGlobally(cause),
          });
    if (options.restoreFrom !== undefined) {
      this.checkpointCoordinator?.restoreLatestCheckpoint(options.restoreFrom);
      this.restoredFrom = options.restoreFrom;
      this.restoredAt = Date.now();
    }
  }

  /** The job's state. */
  get status(): JobStatus {
    return this.currentStatus;
  }

  /** Sets the status and tells the listener (which reports, and must not throw). */
  private transitionTo(status: JobStatus, cause?: Error): void {
    this.currentStatus = status;
    this.statusListener?.(status, cause);
  }

  /**
   * The checkpoint the last restart restored and when (ms since the epoch), for the checkpoint
   * statistics; `undefined` before a restart from a checkpoint.
   */
  get latestRestore():
    | { readonly checkpoint: CompletedCheckpoint; readonly at: number }
    | undefined {
    const checkpoint = this.restoredFrom;
    const at = this.restoredAt;
    return checkpoint === undefined || at === undefined ? undefined : { checkpoint, at };
  }

  /** Every subtask of the job, vertex by vertex. */
  get executionVertices(): readonly ExecutionVertex[] {
    return this.executions.executionVertices;
  }

  /**
   * Registers the job with the master, places every subtask, and deploys the vertices that are
   * ready. A placement that throws fails the job.
   */
  async start(): Promise<void> {
    this.master.registerJob({
      jobId: this.jobId,
      stopTrackingAndReleasePartitions: async (ids) => {
        this.fail(
          new PartitionNotFoundError(`the shuffle master lost the partitions ${ids.join(", ")}`),
        );
      },
    });
    try {
      await this.placeExecutions();
    } catch (error) {
      this.fail(asError(error));
      return;
    }
    if (this.currentStatus !== "CREATED") return;
    this.transitionTo("RUNNING");
    this.checkpointCoordinator?.startCheckpointScheduler();
    await this.schedule();
  }

  updateTaskExecutionState(update: TaskExecutionState): void {
    const execution = this.executions.currentExecution(update.executionAttemptId);
    if (execution === undefined || isTerminal(execution.state)) return;
    execution.state = update.state;
    if (update.result !== undefined) execution.result = update.result;
    if (update.error !== undefined) execution.failureCause = deserializeThrowable(update.error);
    if (update.serializers !== undefined) {
      execution.serializers = update.serializers;
      const mismatch = serializerMismatchOf(this.executions, execution);
      if (mismatch !== undefined) {
        // Before a record is decoded wrongly: the reader is the task that cannot go on. No
        // restart, as every attempt would resolve the same serializers (Flink suppresses
        // restarts for such failures too).
        if (this.currentStatus === "RUNNING") {
          this.setRootCause(mismatch.consumer, mismatch.error);
          this.stop("FAILING", mismatch.error);
        } else {
          this.failTask(mismatch.consumer, mismatch.error);
          this.checkTerminated();
        }
        return;
      }
    }
    switch (update.state) {
      case "FINISHED":
        this.checkpointCoordinator?.taskFinished(execution.attemptId);
        if (this.currentStatus === "RUNNING") void this.schedule();
        break;
      case "FAILED":
        this.failTask(
          execution,
          execution.failureCause ?? new Error(`${execution.name} failed without a cause`),
        );
        break;
      case "CANCELED":
        if (this.currentStatus === "RUNNING") {
          this.failTask(
            execution,
            execution.failureCause ?? new CancelledError(`${execution.name} was canceled`),
          );
        }
        break;
      default:
        return;
    }
    this.checkTerminated();
  }

  async requestPartitionProducerState(
    jobId: JobID,
    _resultId: IntermediateDataSetID,
    partitionId: ResultPartitionID,
  ): Promise<ExecutionState> {
    const producer = this.executions.currentExecution(partitionId.producerId);
    if (!jobId.equals(this.jobId) || producer === undefined) {
      throw new PartitionNotFoundError(
        `the producer ${partitionId.producerId} of partition ${partitionId} is not part of job ${this.jobId}`,
      );
    }
    return producer.state;
  }

  acknowledgeCheckpoint(ack: AcknowledgeCheckpoint): void {
    this.checkpointCoordinator?.receiveAcknowledgeMessage(ack);
  }

  declineCheckpoint(decline: DeclineCheckpoint): void {
    this.checkpointCoordinator?.receiveDeclineMessage(decline);
  }

  /** Cancels the job: every task is canceled; the job ends CANCELED. Idempotent. */
  cancel(reason = `job ${this.graph.name} was canceled`): void {
    this.stop("CANCELLING", new CancelledError(reason));
  }

  /**
   * Fails the job with `cause` (e.g. the shuffle master lost its partitions): every task is
   * canceled and the job ends FAILED, without a restart.
   */
  fail(cause: Error): void {
    this.stop("FAILING", cause);
  }

  /**
   * A TaskExecutor is gone (its process died, its heartbeats stopped). Its tasks that had not
   * ended count as failed with `cause`, and the job restarts (when its restart strategy allows)
   * or fails. When all of the job's tasks there had ended, the job goes on, as in Flink: the
   * partitions the worker held are lost with it, and a consumer that still reads one fails when
   * it cannot (PartitionNotFound or a connection error naming the partition). Nothing is released
   * on that worker at the job's end. The gateway is never used again: a restart asks the
   * placement for every subtask, and a placement that returns this gateway fails the job; provide
   * a replacement (see {@link PlacementContext}).
   */
  notifyTaskExecutorLost(gateway: TaskExecutorGateway, cause: Error): void {
    this.partitions.taskExecutorLost(gateway);
    this.lostGateways.add(gateway);
    let first: ExecutionVertex | undefined;
    for (const execution of this.executionVertices) {
      if (execution.gateway !== gateway || isTerminal(execution.state)) continue;
      execution.state = "FAILED";
      execution.failureCause = cause;
      first ??= execution;
    }
    if (first !== undefined) this.failTask(first, cause);
    this.checkTerminated();
  }

  // ------------------------------------------------------------------------------ scheduling

  /** Deploys, one pass at a time, every vertex whose inputs are ready. */
  private schedule(): Promise<void> {
    this.scheduling = this.scheduling.then(() => this.deployReadyVertices());
    return this.scheduling;
  }

  private async deployReadyVertices(): Promise<void> {
    if (this.currentStatus !== "RUNNING") return;
    const attemptNumber = this.attemptNumber;
    const ready = this.scheduler.nextVerticesToDeploy();
    try {
      for (const vertex of ready) {
        for (const execution of this.subtasksOf(vertex)) {
          if (this.currentStatus !== "RUNNING" || this.attemptNumber !== attemptNumber) return;
          await this.deploy(execution);
        }
      }
    } catch (error) {
      this.failGlobally(asError(error));
      this.checkTerminated();
    }
  }

  private async deploy(execution: ExecutionVertex): Promise<void> {
    const { vertex, gateway, attemptId } = execution;
    // The job may stop or restart while this deployment awaits: then it must not go on.
    const stale = () => this.currentStatus !== "RUNNING" || !execution.attemptId.equals(attemptId);
    const newlyRegistered = await this.partitions.registerProducedPartitions(
      execution,
      this.graph.producedDataSetsOf(vertex),
      this.descriptors,
    );
    const descriptor = this.descriptors.createDeploymentDescriptor(
      execution,
      newlyRegistered.map(({ produced }) => produced),
      (edge, producer) =>
        this.partitions.descriptorForConsumer(
          edge,
          this.subtasksOf(edge.source)[producer] as ExecutionVertex,
          execution,
        ),
      this.restoredFrom,
    );
    if (stale()) return;
    if (
      this.checkpointing !== undefined &&
      gateway.triggerCheckpoint === undefined &&
      this.graph.inputsOf(vertex).length === 0
    ) {
      execution.state = "FAILED";
      this.stop(
        "FAILING",
        new IllegalStateError(
          `job ${this.graph.name} takes checkpoints, but the TaskExecutorGateway of ${execution.name} (${gateway.location.resourceId}) does not forward triggerCheckpoint`,
        ),
      );
      return;
    }
    execution.state = "DEPLOYING";
    this.submitting.add(execution);
    try {
      await gateway.submitTask(descriptor, this);
    } catch (error) {
      this.submitting.delete(execution);
      // Not deployed: nothing runs there that could report, so the attempt fails here.
      if (!execution.attemptId.equals(attemptId) || isTerminal(execution.state)) return;
      execution.state = "FAILED";
      const cause = asError(error);
      const restored = descriptor.taskRestore?.checkpointId;
      if (restored !== undefined && isSluiceError(cause, ErrorCodes.CHECKPOINT)) {
        this.restoreFailed(execution, restored, cause);
      } else {
        this.failTask(execution, cause);
      }
      this.checkTerminated();
      return;
    }
    this.submitting.delete(execution);
    if (stale()) {
      // Stopped while the task was being deployed, so nobody canceled it yet (it did not exist
      // there): cancel it now; its final report ends this attempt.
      this.cancelExecution(execution);
      return;
    }
    for (const registered of newlyRegistered) await this.partitions.updateConsumersOf(registered);
  }

  private subtasksOf(vertex: JobVertex): ExecutionVertex[] {
    return this.executions.subtasksOf(vertex);
  }

  /** Asks the placement for every subtask's TaskExecutor and gives each its current attempt. */
  private placeExecutions(): Promise<void> {
    return this.executions.placeExecutions(this.placement, this.attemptNumber, (gateway) =>
      this.lostGateways.has(gateway),
    );
  }

  // ------------------------------------------------------------------------------- failures

  private failTask(execution: ExecutionVertex, cause: Error): void {
    if (this.currentStatus === "RUNNING") {
      this.setRootCause(execution, cause);
      this.failGlobally(cause);
      return;
    }
    // Reports race across processes: the producer whose partition a failed remote consumer
    // released may report first. The job is failing over already, but the consumer's own error,
    // arriving within that failover, is the cause, not the release it caused.
    const failingOver = this.currentStatus === "FAILING" || this.currentStatus === "RESTARTING";
    if (
      failingOver &&
      this.rootCause !== undefined &&
      isConsequentialFailure(this.rootCause) &&
      !isConsequentialFailure(cause)
    ) {
      this.setRootCause(execution, cause);
    }
    // A task of the attempt being replaced fails as it is canceled: nothing more to decide.
    if (this.currentStatus === "RESTARTING") return;
    this.stop("FAILING", cause);
  }

  /**
   * A task could not read its part of checkpoint `checkpointId` (its snapshot is missing or
   * damaged): that checkpoint is never restored again. The job fails over onto the newest
   * retained checkpoint before it, or, with none left, fails with the task's error: restarting
   * from the same unreadable files could only fail the same way, for ever.
   */
  private restoreFailed(execution: ExecutionVertex, checkpointId: bigint, cause: Error): void {
    const fallback = this.checkpointCoordinator?.markUnusable(checkpointId, cause);
    if (fallback !== undefined) {
      this.failTask(execution, cause);
      return;
    }
    this.setRootCause(execution, cause);
    this.stop(
      "FAILING",
      new CheckpointError(
        `job ${this.graph.name} cannot be restored: checkpoint ${checkpointId} is unreadable and no older retained checkpoint is left (state.checkpoints.num-retained): ${cause.message}`,
        { cause },
      ),
    );
  }

  private setRootCause(execution: ExecutionVertex, cause: Error): void {
    this.rootCause = cause;
    this.failedTaskName = execution.name;
    this.failedTaskLocation = execution.gateway.location;
  }

  /**
   * A failure of the running job: it restarts when the restart strategy allows, else it fails.
   */
  private failGlobally(cause: Error): void {
    if (this.currentStatus === "RESTARTING") return;
    if (this.currentStatus !== "RUNNING") {
      this.stop("FAILING", cause);
      return;
    }
    this.restartStrategy.notifyFailure(cause);
    if (!this.restartStrategy.canRestart()) {
      this.stop("FAILING", cause);
      return;
    }
    void this.restart(cause);
  }

  /**
   * Flink's global failover: cancel every task and wait for all to end, release their
   * partitions, wait the strategy's delay, then place and deploy every subtask as the next
   * attempt, restored from the newest completed checkpoint.
   */
  private async restart(cause: Error): Promise<void> {
    this.rootCause = cause;
    this.transitionTo("RESTARTING", cause);
    this.checkpointCoordinator?.stopCheckpointScheduler();
    this.checkpointCoordinator?.abortPendingCheckpoints(
      CheckpointFailureReason.JOB_FAILOVER_REGION,
    );
    this.cancelExecutions();
    await new Promise<void>((resolve) => {
      this.wakeRestart = resolve;
      this.checkTerminated();
    });
    if (this.currentStatus !== "RESTARTING") return;
    await this.scheduling;
    this.releaseErrors.push(...(await this.releasePartitions()));
    for (;;) {
      await new Promise<void>((resolve) => {
        this.wakeRestart = resolve;
        this.restartDelay = setTimeout(resolve, this.restartStrategy.getBackoffTime());
      });
      this.wakeRestart = undefined;
      if (this.currentStatus !== "RESTARTING") return;
      this.attemptNumber++;
      try {
        await this.placeExecutions();
        break;
      } catch (error) {
        if (this.currentStatus !== "RESTARTING") return;
        // A placement that put a task on a lost TaskExecutor is a bug of the caller: no retry.
        const retriable = !isSluiceError(error, ErrorCodes.ILLEGAL_STATE);
        this.restartStrategy.notifyFailure(asError(error));
        if (!retriable || !this.restartStrategy.canRestart()) {
          this.stop("FAILING", asError(error));
          return;
        }
      }
    }
    if (this.currentStatus !== "RESTARTING") return;
    const restored = this.checkpointCoordinator?.latestCompletedCheckpoint;
    if (restored !== undefined) {
      this.restoredFrom = restored;
      this.restoredAt = Date.now();
    }
    this.partitions.reset();
    this.scheduler.restartScheduling();
    this.failedTaskName = undefined;
    this.failedTaskLocation = undefined;
    this.rootCause = undefined;
    this.transitionTo("RUNNING");
    this.checkpointCoordinator?.startCheckpointScheduler();
    await this.schedule();
  }

  private stop(status: "FAILING" | "CANCELLING", cause: Error): void {
    const restarting = this.currentStatus === "RESTARTING";
    if (this.currentStatus !== "RUNNING" && this.currentStatus !== "CREATED" && !restarting) {
      return;
    }
    this.rootCause = cause;
    this.transitionTo(status, cause);
    this.checkpointCoordinator?.stopCheckpointScheduler();
    clearTimeout(this.restartDelay);
    this.cancelExecutions();
    this.checkTerminated();
  }

  /** Cancels every task that has not ended (the deployment of one being deployed does it). */
  private cancelExecutions(): void {
    for (const execution of this.executionVertices) {
      if (isTerminal(execution.state)) continue;
      if (execution.state === "CREATED") {
        execution.state = "CANCELED";
        continue;
      }
      // Its deployment is in flight and the task may not exist there yet: `deploy` cancels it
      // once the TaskExecutor accepted it.
      if (this.submitting.has(execution)) continue;
      this.cancelExecution(execution);
    }
  }

  private cancelExecution(execution: ExecutionVertex): void {
    const attemptId = execution.attemptId;
    execution.gateway.cancelTask(attemptId).catch((error: unknown) => {
      // A task that ended sent its final report before this reply, so a task still not
      // terminal here never ran there; one whose TaskExecutor cannot be reached cannot report.
      // Either way the job must not wait for it.
      if (!execution.attemptId.equals(attemptId) || isTerminal(execution.state)) return;
      execution.state = isSluiceError(error, ErrorCodes.TASK_NOT_FOUND) ? "CANCELED" : "FAILED";
      this.checkTerminated();
    });
  }

  private checkTerminated(): void {
    const all = this.executionVertices;
    if (this.currentStatus === "RESTARTING") {
      if (all.every((execution) => isTerminal(execution.state))) {
        const wake = this.wakeRestart;
        this.wakeRestart = undefined;
        wake?.();
      }
      return;
    }
    if (this.currentStatus === "RUNNING") {
      if (!all.every((execution) => execution.state === "FINISHED")) return;
      this.transitionTo("FINISHED");
    } else if (this.currentStatus === "FAILING" || this.currentStatus === "CANCELLING") {
      if (!all.every((execution) => isTerminal(execution.state))) return;
      this.transitionTo(this.currentStatus === "FAILING" ? "FAILED" : "CANCELED", this.rootCause);
    } else {
      return;
    }
    if (this.terminating) return;
    this.terminating = true;
    // A restart waiting for its delay or for tasks gives up (it sees the new status).
    this.wakeRestart?.();
    void this.release().then(() => this.termination.resolve(this.result()));
  }

  /**
   * At the job's end: stops the checkpoint coordinator, releases every partition of the job on
   * the master and on the workers that hold them, and unregisters the job.
   */
  private async release(): Promise<void> {
    await this.scheduling;
    const status = this.currentStatus as JobResult["status"];
    await this.checkpointCoordinator?.shutdown(status);
    this.releaseErrors.push(...(await this.releasePartitions()));
    this.releaseErrors.push(...(this.checkpointCoordinator?.discardErrors ?? []));
    this.master.unregisterJob(this.jobId);
  }

  /** Releases the partitions registered so far, on the master and on the workers holding them. */
  private releasePartitions(): Promise<Error[]> {
    return this.partitions.releaseAll(this.executionVertices.map((e) => e.gateway));
  }

  private result(): JobResult {
    const coordinator = this.checkpointCoordinator;
    return jobResultOf({
      jobId: this.jobId,
      status: this.currentStatus as JobResult["status"],
      rootCause: this.rootCause,
      failedTaskName: this.failedTaskName,
      failedTaskLocation: this.failedTaskLocation,
      vertices: this.executions.executionsByVertex,
      releaseErrors: this.releaseErrors,
      completedCheckpoints: coordinator?.numberOfCompletedCheckpoints ?? 0,
      abortedCheckpoints: coordinator?.numberOfAbortedCheckpoints ?? 0,
      restoredFrom: this.restoredFrom,
      latestCheckpoint: coordinator?.latestCompletedCheckpoint,
      restarts: this.attemptNumber,
    });
  }
}

/**
 * Whether a task's failure is a consequence of another failure rather than a cause: its
 * partition or channel was released or canceled, or its producer failed (the producer reports
 * its own error). Flink does not take such failures as the job's root cause either.
 */
function isConsequentialFailure(cause: Error): boolean {
  return (
    isSluiceError(cause, ErrorCodes.CANCELLED) || isSluiceError(cause, ErrorCodes.PRODUCER_FAILED)
  );
}
