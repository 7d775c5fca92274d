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
import {
  ExecutionFailureHandler,
  isConsequentialFailure,
} from "./failover/execution-failure-handler.js";
import { RegionPartitionGroupReleaseStrategy } from "./failover/region-partition-group-release-strategy.js";
import { RestartPipelinedRegionFailoverStrategy } from "./failover/restart-pipelined-region-failover-strategy.js";
import type {
  SchedulingExecutionVertex,
  SchedulingResultPartition,
} from "./failover/scheduling-pipelined-region.js";
import { SchedulingTopology } from "./failover/scheduling-topology.js";
import type { JobGraph, JobVertex } from "./job-graph.js";
import {
  JobMasterPartitionTracker,
  type TrackedPartition,
} from "./job-master-partition-tracker.js";
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
}

/**
 * One running job on the job side (Flink's `JobMaster` with its scheduler, for one job): it
 * deploys the job's subtasks onto TaskExecutors as their inputs become ready, registers their
 * partitions with the ShuffleMaster, answers their producer-state questions, follows their state
 * reports, recovers from failures, and releases the partitions. It is the
 * {@link JobMasterGateway} its tasks report to.
 *
 * Which subtasks are deployed when is decided by Flink's pipelined-region scheduling strategy,
 * what a subtask is deployed with by a task deployment descriptor factory, and a partition
 * tracker keeps the partitions: a blocking one is released as soon as every region that reads it
 * finished (BLOCKING_PERSISTENT ones at the job's end), on the ShuffleMaster and on the worker
 * that holds it.
 *
 * When a task fails or a TaskExecutor is lost and the restart strategy allows it, a job without
 * checkpoints fails over by region (Flink's `RestartPipelinedRegionFailoverStrategy`): only the
 * regions that must re-run are canceled, wait the strategy's delay, are placed again and
 * deployed as their next attempts, while the rest of the job goes on; finished regions whose
 * outputs are still available are not re-run, and the producers of partitions that were lost
 * (with their worker, reported by a consumer or by the ShuffleMaster) are. A job with
 * checkpoints restarts globally (Flink's full failover): it cancels every task, releases every
 * partition, and deploys every task again, restored from the newest completed checkpoint, as a
 * region restart cannot restore a consistent state without the checkpoint's region plan.
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
  private readonly topology: SchedulingTopology;
  private readonly scheduler: PipelinedRegionSchedulingStrategy;
  private readonly failureHandler: ExecutionFailureHandler;
  private readonly releaseStrategy: RegionPartitionGroupReleaseStrategy;
  private readonly descriptors: TaskDeploymentDescriptorFactory;
  private readonly partitions: JobMasterPartitionTracker;
  private readonly lostGateways = new Set<TaskExecutorGateway>();
  /** Executions whose `submitTask` has not answered yet. */
  private readonly submitting = new Set<ExecutionVertex>();
  /** Bumped when a failover takes a subtask: a deployment or restart of an older one stops. */
  private readonly versions = new Map<ExecutionVertex, number>();
  /** The subtasks a region failover is restarting, by the version it took them at. */
  private readonly restarting = new Map<ExecutionVertex, number>();
  /** Subtasks that ran and were restarted at least once. */
  private readonly rerun = new Set<ExecutionVertex>();
  private readonly terminalWaiters: { tasks: readonly ExecutionVertex[]; wake: () => void }[] = [];
  private readonly delays = new Map<NodeJS.Timeout, () => void>();
  private readonly releaseErrors: Error[] = [];
  private releasing: Promise<void> = Promise.resolve();
  private currentStatus: JobStatus = "CREATED";
  private rootCause: Error | undefined;
  /** The root cause's task, by its name and location when it failed (a restart renames it). */
  private failedTaskName: string | undefined;
  private failedTaskLocation: TaskManagerLocation | undefined;
  private scheduling: Promise<void> = Promise.resolve();
  private readonly termination = deferred<JobResult>();
  private numberOfRestarts = 0;
  private pendingRegionRestarts = 0;
  private restoredFrom: CompletedCheckpoint | undefined;
  /** When (ms since the epoch) the last restart restored {@link restoredFrom}. */
  private restoredAt: number | undefined;
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
    this.partitions = new JobMasterPartitionTracker(graph.jobId, master);
    this.topology = new SchedulingTopology(graph);
    this.scheduler = new PipelinedRegionSchedulingStrategy(this.topology, order, (partition) =>
      this.isAvailable(partition),
    );
    this.releaseStrategy = new RegionPartitionGroupReleaseStrategy(this.topology);
    this.failureHandler = new ExecutionFailureHandler(
      this.topology,
      options.checkpointing === undefined
        ? new RestartPipelinedRegionFailoverStrategy(this.topology, (id) =>
            this.partitions.isTracked(id),
          )
        : undefined,
      options.restartStrategy,
    );
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
              calculateCheckpointPlan(this.graph, this.currentStatus, this.executionVertices),
            onTolerableFailuresExceeded: (cause) => this.failGlobally(cause),
          });
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
      stopTrackingAndReleasePartitions: (ids) => this.partitionsLost(ids),
    });
    try {
      await this.executions.placeExecutions(this.placement, (gateway) =>
        this.lostGateways.has(gateway),
      );
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
    if (this.isRestarting(execution)) {
      // Canceled by a region failover, which restarts it: its end is expected, not a failure.
      this.checkTerminated();
      return;
    }
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
        if (this.currentStatus === "RUNNING") {
          this.releaseConsumedPartitions(execution);
          void this.schedule();
        }
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
   * Fails the job with `cause` (e.g. the shuffle master failed fatally): every task is canceled
   * and the job ends FAILED, without a restart.
   */
  fail(cause: Error): void {
    this.stop("FAILING", cause);
  }

  /**
   * A TaskExecutor is gone (its process died, its heartbeats stopped). Its tasks that had not
   * ended count as failed with `cause`, and the partitions it held are lost with it. The job
   * fails over (when its restart strategy allows) or fails: the lost tasks' regions re-run, and
   * so do the producers of lost partitions that a task not finished yet still needs (and their
   * readers). When nothing of the job there is needed any more, the job goes on, as in Flink.
   * Nothing is released on that worker again. The gateway is never used again: a restart asks
   * the placement again, and a placement that returns this gateway fails the job; provide a
   * replacement (see {@link PlacementContext}).
   */
  notifyTaskExecutorLost(gateway: TaskExecutorGateway, cause: Error): void {
    const lost = this.partitions.taskExecutorLost(gateway);
    this.lostGateways.add(gateway);
    this.releaseLater(lost);
    const failed: ExecutionVertex[] = [];
    for (const execution of this.executionVertices) {
      if (execution.gateway !== gateway || isTerminal(execution.state)) continue;
      execution.state = "FAILED";
      execution.failureCause = cause;
      if (!this.isRestarting(execution)) failed.push(execution);
    }
    const [first] = failed;
    if (first !== undefined && this.currentStatus !== "RUNNING") {
      this.failTask(first, cause);
    } else {
      this.failover([...failed, ...this.producersStillNeeded(lost)], cause);
    }
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
    const ready = this.scheduler.nextVerticesToDeploy().map((vertex) => {
      const execution = this.executionOf(vertex);
      return { execution, version: this.versionOf(execution) };
    });
    try {
      for (const { execution, version } of ready) {
        if (this.currentStatus !== "RUNNING") return;
        if (this.versionOf(execution) === version) await this.deploy(execution, version);
      }
    } catch (error) {
      this.failGlobally(asError(error));
      this.checkTerminated();
    }
  }

  private async deploy(execution: ExecutionVertex, version: number): Promise<void> {
    const { vertex, gateway, attemptId } = execution;
    // The job may stop or fail over while this deployment awaits: then it must not go on.
    const stale = () =>
      this.currentStatus !== "RUNNING" ||
      !execution.attemptId.equals(attemptId) ||
      this.versionOf(execution) !== version;
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
      if (this.isRestarting(execution)) {
        this.checkTerminated();
      } else if (restored !== undefined && isSluiceError(cause, ErrorCodes.CHECKPOINT)) {
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

  private executionOf(vertex: SchedulingExecutionVertex): ExecutionVertex {
    return this.subtasksOf(vertex.vertex)[vertex.subtaskIndex] as ExecutionVertex;
  }

  private schedulingVertexOf(execution: ExecutionVertex): SchedulingExecutionVertex {
    return this.topology.executionVertex(execution.vertex, execution.subtaskIndex);
  }

  private versionOf(execution: ExecutionVertex): number {
    return this.versions.get(execution) ?? 0;
  }

  private isRestarting(execution: ExecutionVertex): boolean {
    return this.restarting.get(execution) === this.versionOf(execution);
  }

  /** A blocking partition can be read: its producer FINISHED and it is still tracked. */
  private isAvailable(partition: SchedulingResultPartition): boolean {
    const producer = this.executionOf(partition.producer);
    return producer.state === "FINISHED" && this.partitions.isTracked(partition.id);
  }

  // ------------------------------------------------------------------- partitions and release

  /**
   * `execution` FINISHED: the blocking partitions no region needs any more (every region that
   * reads them finished) are released now; persistent ones stay until the job ends.
   */
  private releaseConsumedPartitions(execution: ExecutionVertex): void {
    const releasable = this.releaseStrategy
      .vertexFinished(this.schedulingVertexOf(execution))
      .filter(({ dataSet }) => {
        const type = dataSet.partitionType;
        return type.isBlocking && type.releasedBy === "scheduler" && !type.isPersistent;
      });
    if (releasable.length === 0) return;
    this.releaseLater(this.partitions.stopTrackingPartitions(releasable.map(({ id }) => id)));
  }

  /** Releases no longer tracked partitions in the background; the job's end waits for it. */
  private releaseLater(partitions: readonly TrackedPartition[]): void {
    if (partitions.length === 0) return;
    this.releasing = this.releasing.then(async () => {
      this.releaseErrors.push(...(await this.partitions.release(partitions)));
    });
  }

  /**
   * The ShuffleMaster lost these partitions (a remote shuffle's lost worker): they are released
   * and no longer tracked, and their producers re-run when a task not finished yet needs them.
   */
  private async partitionsLost(ids: readonly ResultPartitionID[]): Promise<void> {
    const lost = this.partitions.stopTracking(ids);
    this.releaseLater(lost);
    this.failover(
      this.producersStillNeeded(lost),
      new PartitionNotFoundError(`the shuffle master lost the partitions ${ids.join(", ")}`),
    );
    this.checkTerminated();
    await this.releasing;
  }

  /** The producers (current attempts) of `lost` partitions that a task not FINISHED reads. */
  private producersStillNeeded(lost: readonly TrackedPartition[]): ExecutionVertex[] {
    const producers = new Set<ExecutionVertex>();
    for (const { descriptor } of lost) {
      const partition = this.topology.resultPartition(descriptor.resultPartitionId.partitionId);
      if (partition === undefined) continue;
      const producer = this.executionOf(partition.producer);
      if (!producer.attemptId.equals(descriptor.resultPartitionId.producerId)) continue;
      const needed = partition.consumers.some(
        (consumer) => this.executionOf(consumer).state !== "FINISHED",
      );
      if (needed && !this.isRestarting(producer)) producers.add(producer);
    }
    return [...producers];
  }

  // ------------------------------------------------------------------------------- failures

  private failTask(execution: ExecutionVertex, cause: Error): void {
    if (this.currentStatus === "RUNNING") {
      this.failover([execution], cause, execution);
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
   * A failure of the running job's subtasks `failed` (none: nothing to do): the failure handler
   * decides whether to restart regions, the whole job, or to fail it. `task` is the failed task
   * that is the root cause when the job fails.
   */
  private failover(failed: readonly ExecutionVertex[], cause: Error, task = failed[0]): void {
    if (failed.length === 0 || this.currentStatus !== "RUNNING") return;
    const result = this.failureHandler.getFailureHandlingResult(
      failed.map((execution) => this.schedulingVertexOf(execution)),
      cause,
    );
    if (task !== undefined) this.setRootCause(task, cause);
    if (!result.canRestart) {
      this.stop("FAILING", cause);
    } else if (result.globalFailure) {
      void this.restart(cause);
    } else {
      this.rootCause = undefined;
      this.failedTaskName = undefined;
      this.failedTaskLocation = undefined;
      void this.restartRegions(result.verticesToRestart, cause);
    }
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
   * A failure of the running job as a whole: it restarts globally when the restart strategy
   * allows, else it fails.
   */
  private failGlobally(cause: Error): void {
    if (this.currentStatus === "RESTARTING") return;
    if (this.currentStatus !== "RUNNING") {
      this.stop("FAILING", cause);
      return;
    }
    if (!this.failureHandler.getGlobalFailureHandlingResult(cause).canRestart) {
      this.stop("FAILING", cause);
      return;
    }
    void this.restart(cause);
  }

  /**
   * Takes `tasks` for a failover: newer than any deployment or restart of them in flight, and
   * counted as re-run when they had been deployed.
   */
  private takeForRestart(tasks: readonly ExecutionVertex[]): void {
    for (const execution of tasks) {
      this.versions.set(execution, this.versionOf(execution) + 1);
      if (execution.state !== "CREATED") this.rerun.add(execution);
      this.releaseStrategy.vertexUnfinished(this.schedulingVertexOf(execution));
    }
  }

  /**
   * Flink's region failover: cancel the subtasks of the regions to restart that were scheduled
   * and wait for them to end, release their partitions, wait the strategy's delay, then place
   * and deploy them as their next attempts once their inputs are ready again. Regions not
   * scheduled yet are left alone: they are deployed when their inputs are ready.
   */
  private async restartRegions(
    vertices: readonly SchedulingExecutionVertex[],
    cause: Error,
  ): Promise<void> {
    const tasks = vertices
      .filter((vertex) => this.scheduler.isScheduled(this.topology.regionOf(vertex)))
      .map((vertex) => this.executionOf(vertex));
    if (tasks.length === 0) return;
    this.numberOfRestarts++;
    this.pendingRegionRestarts++;
    try {
      this.takeForRestart(tasks);
      const taken = new Map(tasks.map((execution) => [execution, this.versionOf(execution)]));
      for (const [execution, version] of taken) this.restarting.set(execution, version);
      const stillOurs = () => tasks.filter((e) => this.versionOf(e) === taken.get(e));
      // Not available from now on, so nothing that reads them is scheduled meanwhile.
      const released = this.partitions.stopTrackingPartitionsOf(tasks);
      this.cancelExecutions(tasks);
      await this.whenTerminal(tasks);
      if (this.currentStatus !== "RUNNING") return;
      this.releaseLater(released);
      if (!(await this.placeAfterBackoff(stillOurs, "RUNNING", cause))) return;
      const placed = stillOurs();
      for (const execution of placed) this.restarting.delete(execution);
      this.scheduler.restartScheduling(
        new Set(
          placed.map((execution) => this.topology.regionOf(this.schedulingVertexOf(execution))),
        ),
      );
      await this.schedule();
    } finally {
      this.pendingRegionRestarts--;
      this.checkTerminated();
    }
  }

  /**
   * Flink's global failover: cancel every task and wait for all to end, release their
   * partitions, wait the strategy's delay, then place and deploy every subtask as the next
   * attempt, restored from the newest completed checkpoint.
   */
  private async restart(cause: Error): Promise<void> {
    this.numberOfRestarts++;
    this.rootCause = cause;
    this.transitionTo("RESTARTING", cause);
    this.checkpointCoordinator?.stopCheckpointScheduler();
    this.checkpointCoordinator?.abortPendingCheckpoints(
      CheckpointFailureReason.JOB_FAILOVER_REGION,
    );
    const all = this.executionVertices;
    this.takeForRestart(all);
    this.restarting.clear();
    this.cancelExecutions(all);
    await this.whenTerminal(all);
    if (this.currentStatus !== "RESTARTING") return;
    await this.scheduling;
    await this.releasing;
    this.releaseErrors.push(...(await this.partitions.releaseAll()));
    if (!(await this.placeAfterBackoff(() => all, "RESTARTING", cause))) return;
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

  /**
   * Waits the restart strategy's delay, then asks the placement for the next attempts of
   * `tasks()`; a placement that fails counts as a failure and is retried while the strategy
   * allows. False when the job left `status` meanwhile or failed.
   */
  private async placeAfterBackoff(
    tasks: () => readonly ExecutionVertex[],
    status: JobStatus,
    cause: Error,
  ): Promise<boolean> {
    for (;;) {
      await this.delay(this.restartStrategy.getBackoffTime());
      if (this.currentStatus !== status) return false;
      const targets = tasks();
      if (targets.length === 0) return false;
      try {
        await this.executions.placeExecutions(
          this.placement,
          (gateway) => this.lostGateways.has(gateway),
          targets,
        );
        return this.currentStatus === status;
      } catch (error) {
        if (this.currentStatus !== status) return false;
        // A placement that put a task on a lost TaskExecutor is a bug of the caller: no retry.
        const retriable = !isSluiceError(error, ErrorCodes.ILLEGAL_STATE);
        this.restartStrategy.notifyFailure(asError(error));
        if (!retriable || !this.restartStrategy.canRestart()) {
          this.rootCause ??= cause;
          this.stop("FAILING", asError(error));
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
      this.checkTerminated();
    });
  }

  private stop(status: "FAILING" | "CANCELLING", cause: Error): void {
    const restarting = this.currentStatus === "RESTARTING";
    if (this.currentStatus !== "RUNNING" && this.currentStatus !== "CREATED" && !restarting) {
      return;
    }
    this.rootCause = cause;
    this.transitionTo(status, cause);
    this.checkpointCoordinator?.stopCheckpointScheduler();
    for (const [timer, wake] of this.delays) {
      clearTimeout(timer);
      wake();
    }
    this.delays.clear();
    this.cancelExecutions(this.executionVertices);
    this.checkTerminated();
  }

  /** Cancels those of `tasks` that have not ended (the deployment of one being deployed does it). */
  private cancelExecutions(tasks: readonly ExecutionVertex[]): void {
    for (const execution of tasks) {
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
    const stopping = this.currentStatus !== "RUNNING" && this.currentStatus !== "RESTARTING";
    for (const waiter of [...this.terminalWaiters]) {
      if (!stopping && !waiter.tasks.every((execution) => isTerminal(execution.state))) continue;
      this.terminalWaiters.splice(this.terminalWaiters.indexOf(waiter), 1);
      waiter.wake();
    }
    if (this.currentStatus === "RUNNING") {
      if (this.pendingRegionRestarts > 0) return;
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
    for (const waiter of this.terminalWaiters.splice(0)) waiter.wake();
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
    await this.releasing;
    this.releaseErrors.push(...(await this.partitions.releaseAll()));
    this.releaseErrors.push(...(this.checkpointCoordinator?.discardErrors ?? []));
    this.master.unregisterJob(this.jobId);
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
      restarts: this.numberOfRestarts,
      rerun: this.executionVertices.filter((execution) => this.rerun.has(execution)),
    });
  }
}
