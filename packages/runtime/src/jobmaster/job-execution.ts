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
  SnapshotType,
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
import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import { asError } from "../util/as-error.js";
import { CheckpointCoordinator } from "./checkpoints/checkpoint-coordinator.js";
import { calculateCheckpointPlan } from "./checkpoints/checkpoint-plan-calculator.js";
import type { CompletedCheckpoint } from "./checkpoints/completed-checkpoint.js";
import { deploymentWaves } from "./deployment-waves.js";
import { cancelExecution, cancelExecutions } from "./execution-cancellation.js";
import { ExecutionDeployer, type ExecutionDeployerContext } from "./execution-deployer.js";
import { ExecutionGraph } from "./execution-graph.js";
import type { ExecutionVertex } from "./execution-vertex.js";
import { ExecutionFailureHandler } from "./failover/execution-failure-handler.js";
import { executionsLostWith } from "./failover/lost-executions.js";
import { producersStillNeeded } from "./failover/lost-partitions.js";
import { RegionPartitionGroupReleaseStrategy } from "./failover/region-partition-group-release-strategy.js";
import { RestartPipelinedRegionFailoverStrategy } from "./failover/restart-pipelined-region-failover-strategy.js";
import type {
  SchedulingExecutionVertex,
  SchedulingResultPartition,
} from "./failover/scheduling-pipelined-region.js";
import { SchedulingTopology } from "./failover/scheduling-topology.js";
import { TaskRestarter, type TaskRestarterContext } from "./failover/task-restarter.js";
import type { JobExecutionOptions } from "./job-execution-options.js";
import type { JobGraph } from "./job-graph.js";
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
import { RestoredCheckpoint } from "./restored-checkpoint.js";
import { RootCause } from "./root-cause.js";
import { serializerMismatchOf } from "./serializer-compatibility.js";
import { TaskDeploymentDescriptorFactory } from "./task-deployment-descriptor-factory.js";

/**
 * One running job on the job side (Flink's `JobMaster` with its scheduler): it deploys the job's
 * subtasks onto TaskExecutors as their inputs become ready (Flink's pipelined-region scheduling),
 * registers their partitions with the ShuffleMaster, answers their producer-state questions,
 * follows their state reports, recovers from failures, and releases the partitions: a blocking
 * one as soon as every region that reads it finished, a BLOCKING_PERSISTENT one at the job's end.
 * It is the {@link JobMasterGateway} its tasks report to.
 *
 * When a task fails or a TaskExecutor is lost and the restart strategy allows it, the job fails
 * over by region (Flink's `RestartPipelinedRegionFailoverStrategy`; `full` restarts every task):
 * only the regions that must re-run are canceled, placed again after the strategy's delay and
 * deployed as their next attempts, while the rest of the job goes on; finished regions whose
 * outputs are still available are not re-run, the producers of lost partitions are. A job with
 * checkpoints aborts its pending checkpoints and restores the restarted tasks from its newest
 * completed checkpoint (Flink's `restoreLatestCheckpointedStateToSubtasks`).
 *
 * Savepoints ({@link triggerSavepoint}) and stop-with-savepoint ({@link stopWithSavepoint}) are
 * taken through its checkpoint coordinator; a job started from a savepoint or another job's
 * retained checkpoint (`restoreFrom`) may run its vertices at other parallelisms (see
 * `StateAssignmentOperation`).
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
  private readonly statusListener: JobStatusListener | undefined;
  private readonly executions: ExecutionGraph;
  private readonly topology: SchedulingTopology;
  private readonly scheduler: PipelinedRegionSchedulingStrategy;
  private readonly failureHandler: ExecutionFailureHandler;
  private readonly restarter: TaskRestarter;
  private readonly deployer: ExecutionDeployer;
  private readonly releaseStrategy: RegionPartitionGroupReleaseStrategy;
  private readonly descriptors: TaskDeploymentDescriptorFactory;
  private readonly partitions: JobMasterPartitionTracker;
  private readonly lostGateways = new Set<TaskExecutorGateway>();
  private readonly isLost = (gateway: TaskExecutorGateway) => this.lostGateways.has(gateway);
  private readonly releaseErrors: Error[] = [];
  private currentStatus: JobStatus = "CREATED";
  private readonly rootCause = new RootCause();
  private scheduling: Promise<void> = Promise.resolve();
  private readonly termination = deferred<JobResult>();
  private readonly restored = new RestoredCheckpoint();
  /** The checkpoint or savepoint the job was deployed to restore: its first attempts restore it. */
  private initialRestore: CompletedCheckpoint | undefined;
  private terminating = false;
  /** Why the job is being suspended, once {@link suspend} was called. */
  private suspension: Error | undefined;
  /** A stop-with-savepoint whose savepoint completed: told when the job ends or fails over. */
  private stopWaiter: ((failure: Error | undefined) => void) | undefined;

  constructor(
    graph: JobGraph,
    master: ShuffleMaster,
    placement: Placement,
    order: DeploymentOrder,
    options: JobExecutionOptions,
  ) {
    this.descriptors = new TaskDeploymentDescriptorFactory(
      graph,
      options.checkpointing,
      options.leadershipEpoch,
    );
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
      options.failoverStrategy !== "full"
        ? new RestartPipelinedRegionFailoverStrategy(this.topology, (id) =>
            this.partitions.isTracked(id),
          )
        : undefined,
      options.restartStrategy,
    );
    this.restarter = new TaskRestarter(
      this.context(),
      this.topology,
      this.scheduler,
      this.releaseStrategy,
      options.restartStrategy,
    );
    this.deployer = new ExecutionDeployer(
      this.executions,
      this.partitions,
      this.descriptors,
      options.checkpointing,
      this.context(),
    );
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
            ...(options.storeCompletedCheckpoint === undefined
              ? {}
              : { storeCompletedCheckpoint: options.storeCompletedCheckpoint }),
            ...(options.checkpointIdCounter === undefined
              ? {}
              : { checkpointIdCounter: options.checkpointIdCounter }),
            ...(options.discardRetainedCheckpointsOnShutdown === undefined
              ? {}
              : { discardRetainedOnShutdown: options.discardRetainedCheckpointsOnShutdown }),
          });
    if (options.restoreFrom !== undefined) {
      // Decided before anything is deployed: a checkpoint that does not fit the job (a max
      // parallelism that changed, state that cannot be rescaled) fails the deployment at once.
      this.descriptors.assignmentOf(options.restoreFrom);
      this.checkpointCoordinator?.restoreLatestCheckpoint(options.restoreFrom);
      this.restored.restore(options.restoreFrom);
      // The subtasks exist once placed (start): their first attempts restore it then.
      this.initialRestore = options.restoreFrom;
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
    return this.restored.stats;
  }

  /** How many times the job restarted so far (global and regional failovers alike). */
  get restarts(): number {
    return this.restarter.restarts;
  }

  /** Every subtask of the job, vertex by vertex. */
  get executionVertices(): readonly ExecutionVertex[] {
    return this.executions.executionVertices;
  }

  /** Registers the job, places every subtask, deploys what is ready; a failed placement fails it. */
  async start(): Promise<void> {
    this.master.registerJob({
      jobId: this.jobId,
      stopTrackingAndReleasePartitions: (ids) => this.partitionsLost(ids),
    });
    try {
      await this.executions.placeExecutions(this.placement, this.isLost);
    } catch (error) {
      this.fail(asError(error));
      return;
    }
    const restore = this.initialRestore;
    if (restore !== undefined) {
      for (const execution of this.executionVertices) execution.restoreFrom = restore;
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
    if (this.restarter.isRestarting(execution)) {
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
          this.rootCause.set(mismatch.error, mismatch.consumer);
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

  /**
   * Triggers a savepoint of the running job (Flink's `triggerSavepoint`) into a new folder
   * `savepoint-<job>-<random>` in `targetDirectory` (default `state.savepoints.dir`), and
   * resolves with that folder once every task acknowledged it and its `_metadata` is written. A
   * job can be started from it, at other parallelisms (`DeployOptions.savepointRestore`). With
   * `cancelJob` (Flink's cancel-with-savepoint) no checkpoint is triggered meanwhile and the job
   * is canceled once the savepoint completed; when it fails, the job goes on.
   *
   * @throws IllegalStateError when the job takes no checkpoints (its tasks take no snapshots);
   *   CheckpointError when the savepoint cannot start or is aborted, naming why.
   */
  async triggerSavepoint(
    targetDirectory?: string,
    options: { readonly cancelJob?: boolean } = {},
  ): Promise<string> {
    const coordinator = this.coordinatorFor("savepoint");
    const cancelJob = options.cancelJob === true;
    if (cancelJob) coordinator.stopCheckpointScheduler();
    let savepoint: CompletedCheckpoint;
    try {
      savepoint = await coordinator.triggerSavepoint(targetDirectory, SnapshotType.SAVEPOINT);
    } catch (error) {
      if (cancelJob && this.currentStatus === "RUNNING") coordinator.startCheckpointScheduler();
      throw error;
    }
    if (cancelJob) {
      this.cancel(
        `job ${this.graph.name} was canceled with savepoint ${savepoint.externalPointer}`,
      );
    }
    return savepoint.externalPointer;
  }

  /**
   * Stops the job with a savepoint (Flink's `stopWithSavepoint`): periodic checkpoints stop,
   * and a synchronous savepoint is triggered at the sources. Each source stops (`Task.stopMode`)
   * and sends `EndOfData(NO_DRAIN)` — or `EndOfData(DRAIN)` with `drain`, so every task emits
   * what it would at the end of its input (Flink's `--drain`) — and then the savepoint's barrier;
   * without drain no task emits its end-of-input results (they stay in the savepoint's state).
   * Every task finishes once the savepoint completed, and the job ends FINISHED. Resolves with
   * the savepoint's folder once it did.
   *
   * When the savepoint fails, the tasks that stopped for it fail, and the job fails over to its
   * latest checkpoint and goes on (as in Flink); the promise rejects with the savepoint's error.
   * When the savepoint completed but the job then fails over instead of finishing, it rejects
   * naming the failure (the savepoint stays usable).
   *
   * @throws IllegalStateError when the job takes no checkpoints or is not RUNNING;
   *   CheckpointError when the savepoint cannot start (no target folder, a stop already pending,
   *   `execution.checkpointing.checkpoints-after-tasks-finish` off) or is aborted.
   */
  async stopWithSavepoint(
    targetDirectory?: string,
    options: { readonly drain?: boolean } = {},
  ): Promise<string> {
    const coordinator = this.coordinatorFor("stop-with-savepoint");
    if (this.currentStatus !== "RUNNING") {
      throw new IllegalStateError(
        `cannot stop job ${this.graph.name} with a savepoint: it is ${this.currentStatus}`,
      );
    }
    coordinator.stopCheckpointScheduler();
    const type =
      options.drain === true ? SnapshotType.SAVEPOINT_TERMINATE : SnapshotType.SAVEPOINT_SUSPEND;
    let savepoint: CompletedCheckpoint;
    try {
      savepoint = await coordinator.triggerSavepoint(targetDirectory, type);
    } catch (error) {
      if (this.currentStatus === "RUNNING") coordinator.startCheckpointScheduler();
      throw error;
    }
    const location = savepoint.externalPointer;
    const failure = await new Promise<Error | undefined>((resolve) => {
      if (this.terminating || this.status !== "RUNNING") {
        resolve(this.status === "FINISHED" ? undefined : this.rootCause.error);
        return;
      }
      this.stopWaiter = resolve;
      this.checkTerminated();
    });
    if (failure !== undefined || this.status !== "FINISHED") {
      throw new IllegalStateError(
        `job ${this.graph.name} did not finish after its savepoint ${savepoint.checkpointId} (${location}) completed: it is ${this.status}${failure === undefined ? "" : `: ${failure.message}`}`,
        { cause: failure },
      );
    }
    return location;
  }

  /** The coordinator of a job that takes checkpoints, for `what`. */
  private coordinatorFor(what: string): CheckpointCoordinator {
    const coordinator = this.checkpointCoordinator;
    if (coordinator === undefined) {
      throw new IllegalStateError(
        `job ${this.graph.name} takes no checkpoints (execution.checkpointing.interval is unset), so its tasks take no snapshots: a ${what} needs them`,
      );
    }
    return coordinator;
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

  /** Fails the job with `cause` (the shuffle master failed fatally): no restart. */
  fail(cause: Error): void {
    this.stop("FAILING", cause);
  }

  /**
   * Suspends the job (Flink's `suspend`): its job manager lost its leadership, or closes while
   * another one is to take the job over. Checkpointing stops and nothing is deleted from now on
   * (`CheckpointCoordinator.suspend`: the checkpoints the high-availability store names stay for
   * the next leader), every task is canceled, and the job ends SUSPENDED, however it was
   * ending: it is not done, and no result of it may be stored here. Idempotent; nothing for a
   * job that ended already.
   */
  suspend(cause: Error): void {
    if (this.suspension !== undefined || this.terminating) return;
    this.suspension = cause;
    this.checkpointCoordinator?.suspend();
    if (this.currentStatus === "FAILING" || this.currentStatus === "CANCELLING") {
      this.checkTerminated();
      return;
    }
    this.stop("CANCELLING", cause);
  }

  /**
   * A TaskExecutor is gone (its process died, its heartbeats stopped). Its tasks that had not
   * ended count as failed with `cause`, and the partitions it held are lost with it. The job
   * fails over (when its restart strategy allows) or fails: the lost tasks' regions re-run, and so
   * do, at once, the producers of lost partitions that a reader not deployed yet will read (and
   * their readers). A reader already deployed fails reading a lost partition by itself, as in
   * Flink, and that failure re-runs the producer. When nothing of the job there is needed any
   * more, the job goes on.
   * Nothing is released on that worker again. The gateway is never used again: a restart asks
   * the placement again, and a placement that returns this gateway fails the job; provide a
   * replacement (see {@link PlacementContext}).
   */
  notifyTaskExecutorLost(gateway: TaskExecutorGateway, cause: Error): void {
    const lost = this.partitions.taskExecutorLost(gateway);
    this.lostGateways.add(gateway);
    this.partitions.releaseInBackground(lost);
    const failed = executionsLostWith(
      gateway,
      this.executionVertices,
      this.currentStatus === "RUNNING",
      cause,
      (execution) => this.restarter.isRestarting(execution),
    );
    const [first] = failed;
    if (first !== undefined && this.currentStatus !== "RUNNING") this.failTask(first, cause);
    else this.failover([...failed, ...this.producersStillNeeded(lost)], cause);
    this.checkTerminated();
  }

  // ------------------------------------------------------------------------------ scheduling

  /**
   * Deploys, one pass at a time, every vertex whose inputs are ready, wave by wave (see
   * {@link deploymentWaves}).
   */
  private schedule(): Promise<void> {
    this.scheduling = this.scheduling.then(() => this.deployReadyVertices());
    return this.scheduling;
  }

  private async deployReadyVertices(): Promise<void> {
    if (this.currentStatus !== "RUNNING") return;
    const ready = this.scheduler.nextVerticesToDeploy().map((vertex) => {
      const execution = this.executionOf(vertex);
      return { execution, version: this.restarter.versionOf(execution) };
    });
    try {
      // Placed at the start, on a worker lost before their region was scheduled: placed again.
      const stranded = ready
        .map(({ execution }) => execution)
        .filter((e) => this.isLost(e.gateway));
      if (stranded.length > 0)
        await this.executions.relocate(this.placement, this.isLost, stranded);
      for (const wave of deploymentWaves(this.graph, ready)) {
        if (this.currentStatus !== "RUNNING") return;
        // Submitted together, as Flink deploys a region: waiting for each answer in turn made the
        // deploy grow with the number of subtasks. A failed submit fails over in `deploy`, and
        // the others of the wave see it there (stale) once they answer.
        const deployed = await Promise.allSettled(
          wave
            .filter(({ execution, version }) => this.restarter.versionOf(execution) === version)
            .map(({ execution, version }) => this.deployer.deploy(execution, version)),
        );
        const failed = deployed.find((outcome) => outcome.status === "rejected");
        if (failed !== undefined) throw failed.reason;
      }
    } catch (error) {
      this.failGlobally(asError(error));
      this.checkTerminated();
    }
  }

  /** The producers of `lost` partitions that must re-run, and that no failover restarts yet. */
  private producersStillNeeded(lost: readonly TrackedPartition[]): ExecutionVertex[] {
    return producersStillNeeded(this.topology, lost, (vertex) => this.executionOf(vertex)).filter(
      (producer) => !this.restarter.isRestarting(producer),
    );
  }

  private executionOf(vertex: SchedulingExecutionVertex): ExecutionVertex {
    return this.executions.subtasksOf(vertex.vertex)[vertex.subtaskIndex] as ExecutionVertex;
  }

  private schedulingVertexOf(execution: ExecutionVertex): SchedulingExecutionVertex {
    return this.topology.executionVertex(execution.vertex, execution.subtaskIndex);
  }

  /** What the deployer and the restarter do to this job. */
  private context(): ExecutionDeployerContext & TaskRestarterContext {
    const job = this;
    return {
      jobMaster: this,
      isStale: (execution, version) =>
        this.currentStatus !== "RUNNING" || this.restarter.versionOf(execution) !== version,
      submitFailed: (execution, cause, restored) => {
        if (this.restarter.isRestarting(execution)) {
          // Expected: the failover that restarts it waits for its end.
        } else if (restored !== undefined && isSluiceError(cause, ErrorCodes.CHECKPOINT)) {
          this.restoreFailed(execution, restored, cause);
        } else {
          this.failTask(execution, cause);
        }
        this.checkTerminated();
      },
      fail: (cause) => this.stop("FAILING", cause),
      cancelExecution: (execution) => cancelExecution(execution, () => this.checkTerminated()),
      get status() {
        return job.currentStatus;
      },
      get executionVertices() {
        return job.executionVertices;
      },
      executionOf: (vertex) => this.executionOf(vertex),
      cancelExecutions: (tasks) => this.cancelExecutions(tasks),
      placeExecutions: (tasks) =>
        this.executions.placeExecutions(this.placement, this.isLost, tasks),
      partitions: this.partitions,
      releaseAllPartitions: async () => {
        await this.scheduling;
        this.releaseErrors.push(...(await this.partitions.releaseAll()));
      },
      schedule: () => this.schedule(),
      beginGlobalRestart: (cause) => {
        this.rootCause.error = cause;
        this.stopWaiter?.(cause);
        this.stopWaiter = undefined;
        this.transitionTo("RESTARTING", cause);
        this.checkpointCoordinator?.stopCheckpointScheduler();
        this.checkpointCoordinator?.abortPendingCheckpoints(
          CheckpointFailureReason.JOB_FAILOVER_REGION,
        );
      },
      completeGlobalRestart: () => {
        this.restoreExecutions(this.executionVertices);
        this.partitions.reset();
        this.rootCause.clear();
        this.transitionTo("RUNNING");
        this.checkpointCoordinator?.startCheckpointScheduler();
      },
      beginRegionalRestart: () => {
        // Flink's SchedulerBase.restoreState: the canceled attempts will not acknowledge them,
        // and a checkpoint must not complete with the old attempts' part of a restored region.
        this.checkpointCoordinator?.abortPendingCheckpoints(
          CheckpointFailureReason.JOB_FAILOVER_REGION,
        );
        this.stopWaiter?.(new IllegalStateError(`job ${this.graph.name} failed over`));
        this.stopWaiter = undefined;
      },
      restoreRegions: (tasks) => {
        this.checkpointCoordinator?.abortPendingCheckpoints(
          CheckpointFailureReason.JOB_FAILOVER_REGION,
        );
        this.restoreExecutions(tasks);
      },
    };
  }

  /**
   * `tasks` restore the latest completed checkpoint when next deployed (none completed yet:
   * what they restored before, if anything).
   */
  private restoreExecutions(tasks: readonly ExecutionVertex[]): void {
    const latest = this.checkpointCoordinator?.latestCompletedCheckpoint;
    if (latest === undefined) return;
    this.restored.restore(latest);
    for (const execution of tasks) execution.restoreFrom = latest;
  }

  /** A blocking partition can be read: its producer FINISHED and it is still tracked. */
  private isAvailable(partition: SchedulingResultPartition): boolean {
    const producer = this.executionOf(partition.producer);
    return producer.state === "FINISHED" && this.partitions.isTracked(partition.id);
  }

  /**
   * `execution` FINISHED: the blocking partitions no region needs any more (every region that
   * reads them finished) are released now; persistent ones stay until the job ends.
   */
  private releaseConsumedPartitions(execution: ExecutionVertex): void {
    const releasable = this.releaseStrategy.vertexFinished(this.schedulingVertexOf(execution));
    this.partitions.releaseInBackground(
      this.partitions.stopTrackingPartitions(releasable.map(({ id }) => id)),
    );
  }

  /**
   * The ShuffleMaster lost these partitions (a remote shuffle's lost worker): they are released
   * and no longer tracked, and their producers re-run when a task not finished yet needs them.
   */
  private async partitionsLost(ids: readonly ResultPartitionID[]): Promise<void> {
    const lost = this.partitions.stopTracking(ids);
    this.partitions.releaseInBackground(lost);
    this.failover(
      this.producersStillNeeded(lost),
      new PartitionNotFoundError(`the shuffle master lost the partitions ${ids.join(", ")}`),
    );
    this.checkTerminated();
    this.releaseErrors.push(...(await this.partitions.awaitReleases()));
  }

  // ------------------------------------------------------------------------------- failures

  private failTask(execution: ExecutionVertex, cause: Error): void {
    if (this.currentStatus === "RUNNING") {
      this.failover([execution], cause, execution);
      return;
    }
    if (this.currentStatus === "FAILING" || this.currentStatus === "RESTARTING") {
      this.rootCause.taskFailedMeanwhile(execution, cause);
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
    this.rootCause.set(cause, task);
    if (!result.canRestart) {
      this.stop("FAILING", cause);
    } else if (result.globalFailure) {
      void this.restarter.restartGlobally(cause);
    } else {
      this.rootCause.clear();
      void this.restarter
        .restartRegions(result.verticesToRestart)
        .then(() => this.checkTerminated());
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
    this.rootCause.set(cause, execution);
    this.stop(
      "FAILING",
      new CheckpointError(
        `job ${this.graph.name} cannot be restored: checkpoint ${checkpointId} is unreadable and no older retained checkpoint is left (state.checkpoints.num-retained): ${cause.message}`,
        { cause },
      ),
    );
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
    void this.restarter.restartGlobally(cause);
  }

  private stop(status: "FAILING" | "CANCELLING", cause: Error): void {
    const restarting = this.currentStatus === "RESTARTING";
    if (this.currentStatus !== "RUNNING" && this.currentStatus !== "CREATED" && !restarting) {
      return;
    }
    this.rootCause.error = cause;
    this.transitionTo(status, cause);
    this.checkpointCoordinator?.stopCheckpointScheduler();
    this.restarter.stop();
    this.cancelExecutions(this.executionVertices);
    this.checkTerminated();
  }

  /** Cancels those of `tasks` that have not ended (the deployment of one being deployed does it). */
  private cancelExecutions(tasks: readonly ExecutionVertex[]): void {
    cancelExecutions(
      tasks,
      (execution) => this.deployer.isSubmitting(execution),
      () => this.checkTerminated(),
    );
  }

  private checkTerminated(): void {
    const all = this.executionVertices;
    this.restarter.onStateChanged(
      this.currentStatus !== "RUNNING" && this.currentStatus !== "RESTARTING",
    );
    if (this.currentStatus === "RUNNING") {
      if (this.restarter.hasPendingRestarts) return;
      if (!all.every((execution) => execution.state === "FINISHED")) return;
      this.transitionTo("FINISHED");
    } else if (this.currentStatus === "FAILING" || this.currentStatus === "CANCELLING") {
      if (!all.every((execution) => isTerminal(execution.state))) return;
      if (this.suspension !== undefined) {
        this.rootCause.error = this.suspension;
        this.transitionTo("SUSPENDED", this.suspension);
      } else {
        const status = this.currentStatus === "FAILING" ? "FAILED" : "CANCELED";
        this.transitionTo(status, this.rootCause.error);
      }
    } else {
      return;
    }
    if (this.terminating) return;
    this.terminating = true;
    this.stopWaiter?.(this.status === "FINISHED" ? undefined : this.rootCause.error);
    this.stopWaiter = undefined;
    // A restart waiting for its delay or for tasks gives up (it sees the new status).
    this.restarter.stop();
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
    this.releaseErrors.push(...(await this.partitions.releaseAll()));
    this.releaseErrors.push(...(this.checkpointCoordinator?.discardErrors ?? []));
    this.master.unregisterJob(this.jobId);
  }

  private result(): JobResult {
    const coordinator = this.checkpointCoordinator;
    return jobResultOf({
      jobId: this.jobId,
      status: this.currentStatus as JobResult["status"],
      rootCause: this.rootCause.error,
      failedTaskName: this.rootCause.taskName,
      failedTaskLocation: this.rootCause.taskLocation,
      vertices: this.executions.executionsByVertex,
      releaseErrors: this.releaseErrors,
      completedCheckpoints: coordinator?.numberOfCompletedCheckpoints ?? 0,
      abortedCheckpoints: coordinator?.numberOfAbortedCheckpoints ?? 0,
      restoredFrom: this.restored.checkpoint,
      latestCheckpoint: coordinator?.latestCompletedCheckpoint,
      restarts: this.restarter.restarts,
      rerun: this.restarter.rerunExecutions,
    });
  }
}
