import {
  CancelledError,
  ErrorCodes,
  ExecutionAttemptID,
  ExecutionGraphID,
  IllegalArgumentError,
  IllegalStateError,
  type IntermediateDataSetID,
  isSluiceError,
  type JobID,
  PartitionNotFoundError,
  ResultPartitionID,
  SerializationError,
} from "@sluice/core";
import {
  createInputGateDeploymentDescriptor,
  createPartitionInfo,
  createResultPartitionDeploymentDescriptor,
  createUnknownShuffleDescriptor,
  type ExecutionState,
  type JsonValue,
  type PartitionDescriptor,
  type ShuffleDescriptor,
  type ShuffleMaster,
} from "@sluice/runtime-api";
import { CheckpointError } from "../checkpointing/checkpoint-error.js";
import type { AcknowledgeCheckpoint } from "../messages/acknowledge-checkpoint.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import { CheckpointingMode } from "../messages/checkpointing-mode.js";
import type { DeclineCheckpoint } from "../messages/decline-checkpoint.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import { deserializeThrowable } from "../messages/serialized-throwable.js";
import {
  createTaskDeploymentDescriptor,
  type TaskDeploymentDescriptor,
} from "../messages/task-deployment-descriptor.js";
import type { TaskExecutionState, TaskSerializers } from "../messages/task-execution-state.js";
import type {
  TaskExecutorGateway,
  TaskManagerLocation,
} from "../messages/task-executor-gateway.js";
import {
  CheckpointCoordinator,
  type CheckpointPlan,
} from "./checkpoints/checkpoint-coordinator.js";
import type { CheckpointCoordinatorConfiguration } from "./checkpoints/checkpoint-coordinator-configuration.js";
import type { CompletedCheckpoint } from "./checkpoints/completed-checkpoint.js";
import type { Placement, PlacementContext } from "./job-deployer.js";
import {
  consumedPartitionsOf,
  type IntermediateDataSet,
  type JobEdge,
  type JobGraph,
  type JobVertex,
  numberOfSubpartitions,
  partitionIdOf,
} from "./job-graph.js";
import type { RestartBackoffTimeStrategy } from "./restart-backoff-time-strategy.js";

/** Whether producers or consumers of a pipelined edge are deployed first. */
export type DeploymentOrder = "producers-first" | "consumers-first";

/** The states of a job (Flink's `JobStatus`, the ones this runtime reaches). */
export type JobStatus =
  | "CREATED"
  | "RUNNING"
  | "RESTARTING"
  | "FAILING"
  | "CANCELLING"
  | "FINISHED"
  | "FAILED"
  | "CANCELED";

/** How a job ended. */
export interface JobResult {
  /** The job. */
  readonly jobId: JobID;
  /** FINISHED, FAILED or CANCELED. */
  readonly status: "FINISHED" | "FAILED" | "CANCELED";
  /**
   * The root cause of a failed or canceled job: the first failure that is not a consequence of
   * another (a task that fails because its partition was released or its producer failed is
   * not the cause, as in Flink), with the code, message and stack the task reported.
   */
  readonly error?: Error;
  /** The task whose failure failed the job, as `Name (i/n)#a`. */
  readonly failedTask?: string;
  /** Where {@link failedTask} ran: its TaskExecutor's resource id, host and data port. */
  readonly failedTaskLocation?: TaskManagerLocation;
  /** What each vertex's subtasks returned, by vertex name, in subtask order. */
  readonly results: ReadonlyMap<string, readonly (JsonValue | undefined)[]>;
  /**
   * Errors while releasing the job's partitions (at its end or at a restart) or deleting its
   * checkpoint files (the job's outcome stands).
   */
  readonly releaseErrors: readonly Error[];
  /** The job's checkpoints (all zero when it took none). */
  readonly checkpoints: JobCheckpointsSummary;
  /** How often the job restarted after a failure. */
  readonly restarts: number;
}

/** What a job's checkpoints came to (Flink's checkpoint statistics summary). */
export interface JobCheckpointsSummary {
  /** Checkpoints every task acknowledged. */
  readonly completed: number;
  /** Checkpoints triggered and aborted (declined, expired, subsumed, ended by a failover). */
  readonly aborted: number;
  /** The checkpoint the last restart restored; `undefined` without a restart from one. */
  readonly restoredFrom?: bigint;
  /**
   * Bytes of in-flight data (channel state of an unaligned checkpoint) the restored checkpoint
   * held and the restart replayed; present with `restoredFrom`.
   */
  readonly restoredPersistedDataBytes?: number;
  /** The newest completed checkpoint, with its per-task figures. */
  readonly latest?: CompletedCheckpoint;
}

/** How a job checkpoints and recovers; what {@link JobDeployer} reads from the configuration. */
export interface JobExecutionOptions {
  /** Present when the job takes checkpoints (`execution.checkpointing.interval` is set). */
  readonly checkpointing?: CheckpointCoordinatorConfiguration;
  /** Whether and when a failed job restarts (`restart-strategy.*`). */
  readonly restartStrategy: RestartBackoffTimeStrategy;
}

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
}

interface RegisteredPartition {
  readonly dataSet: IntermediateDataSet;
  readonly descriptor: ShuffleDescriptor;
}

interface PendingUpdate {
  readonly consumer: ExecutionVertex;
  readonly edge: JobEdge;
}

const TERMINAL: ReadonlySet<ExecutionState> = new Set(["FINISHED", "FAILED", "CANCELED"]);

/**
 * One running job on the job side (Flink's `JobMaster` with its scheduler, for one attempt of the
 * job): it deploys the job's subtasks onto TaskExecutors as their inputs become ready, registers
 * their partitions with the ShuffleMaster, answers their producer-state questions, follows their
 * state reports, fails the job (canceling every other task) when one fails, and releases every
 * partition when the job ends. It is the {@link JobMasterGateway} its tasks report to.
 *
 * Scheduling follows Flink's pipelined-region strategy, per job vertex: the vertices of a
 * pipelined region ({@link JobGraph.pipelinedRegions}) are deployed together, once every
 * blocking data set the region reads from another region is complete — all its producer subtasks
 * FINISHED — and every other input's producer is deployed. So a batch job runs stage by stage,
 * and no pipelined producer is deployed before the consumer that drains it can be. Partitions
 * live until the job ends, however many consumers read them; then each worker that holds some
 * (`storesLocalResourcesOn`) is told to release them, which deletes blocking partitions' files.
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
  private readonly order: DeploymentOrder;
  private readonly checkpointing: CheckpointCoordinatorConfiguration | undefined;
  private readonly restartStrategy: RestartBackoffTimeStrategy;
  private readonly executionGraphId = new ExecutionGraphID();
  private readonly vertices = new Map<JobVertex, ExecutionVertex[]>();
  private readonly byAttempt = new Map<string, ExecutionVertex>();
  private readonly regions: readonly (readonly JobVertex[])[];
  private readonly deployedVertices = new Set<JobVertex>();
  private readonly partitions = new Map<string, RegisteredPartition>();
  /** Resource ids of TaskExecutors that are gone: nothing is released there. */
  private readonly lostTaskExecutors = new Set<string>();
  private readonly pendingUpdates = new Map<string, PendingUpdate[]>();
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
  private resolveTerminated!: (result: JobResult) => void;
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
    for (const dataSet of graph.dataSets) {
      if (dataSet.consumers.length === 0) {
        throw new IllegalArgumentError(
          `data set ${dataSet.id} of "${dataSet.producer.name}" in job ${graph.name} has no consumer; connect one with connectDataSet`,
        );
      }
    }
    this.graph = graph;
    this.jobId = graph.jobId;
    this.master = master;
    this.placement = placement;
    this.order = order;
    this.regions = graph.pipelinedRegions();
    this.checkpointing = options.checkpointing;
    this.restartStrategy = options.restartStrategy;
    this.terminated = new Promise((resolve) => {
      this.resolveTerminated = resolve;
    });
    this.checkpointCoordinator =
      options.checkpointing === undefined
        ? undefined
        : new CheckpointCoordinator({
            jobId: this.jobId,
            configuration: options.checkpointing,
            calculateCheckpointPlan: () => this.calculateCheckpointPlan(),
            onTolerableFailuresExceeded: (cause) => this.failGlobally(cause),
          });
  }

  /** The job's state. */
  get status(): JobStatus {
    return this.currentStatus;
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
    return [...this.vertices.values()].flat();
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
    this.currentStatus = "RUNNING";
    this.checkpointCoordinator?.startCheckpointScheduler();
    await this.schedule();
  }

  updateTaskExecutionState(update: TaskExecutionState): void {
    const execution = this.byAttempt.get(update.executionAttemptId.toString());
    if (execution === undefined || TERMINAL.has(execution.state)) return;
    execution.state = update.state;
    if (update.result !== undefined) execution.result = update.result;
    if (update.error !== undefined) execution.failureCause = deserializeThrowable(update.error);
    if (update.serializers !== undefined) {
      execution.serializers = update.serializers;
      const mismatch = this.serializerMismatchOf(execution);
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
    const producer = this.byAttempt.get(partitionId.producerId.toString());
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
    this.lostTaskExecutors.add(gateway.location.resourceId.toString());
    this.lostGateways.add(gateway);
    let first: ExecutionVertex | undefined;
    for (const execution of this.executionVertices) {
      if (execution.gateway !== gateway || TERMINAL.has(execution.state)) continue;
      execution.state = "FAILED";
      execution.failureCause = cause;
      first ??= execution;
    }
    if (first !== undefined) this.failTask(first, cause);
    this.checkTerminated();
  }

  // ------------------------------------------------------------------------------ placement

  /** Asks the placement for every subtask's TaskExecutor and gives each its current attempt. */
  private async placeExecutions(): Promise<void> {
    const attemptNumber = this.attemptNumber;
    const placed: [JobVertex, ExecutionVertex[]][] = [];
    for (const vertex of this.graph.vertices) {
      const previous = this.vertices.get(vertex);
      const subtasks: ExecutionVertex[] = [];
      for (let i = 0; i < vertex.parallelism; i++) {
        const context: PlacementContext = {
          attemptNumber,
          ...(previous === undefined ? {} : { previous: (previous[i] as ExecutionVertex).gateway }),
          isLost: (gateway) => this.lostGateways.has(gateway),
        };
        const gateway = await this.placement(vertex, i, context);
        if (this.lostGateways.has(gateway)) {
          throw new IllegalStateError(
            `the placement put ${vertex.name} (${i + 1}/${vertex.parallelism}) of job ${this.graph.name} on TaskExecutor ${gateway.location.resourceId}, which was lost; it must return a replacement`,
          );
        }
        subtasks.push({
          vertex,
          subtaskIndex: i,
          attemptId: new ExecutionAttemptID(this.executionGraphId, vertex.id, i, attemptNumber),
          gateway,
          name: `${vertex.name} (${i + 1}/${vertex.parallelism})#${attemptNumber}`,
          state: "CREATED",
        });
      }
      placed.push([vertex, subtasks]);
    }
    // Swapped in only once every subtask is placed: a failed placement leaves the old attempt.
    this.byAttempt.clear();
    for (const [vertex, subtasks] of placed) {
      const existing = this.vertices.get(vertex);
      if (existing === undefined) this.vertices.set(vertex, subtasks);
      subtasks.forEach((next, i) => {
        // The same objects across attempts, so references callers hold see the new attempt.
        const execution = existing?.[i] ?? next;
        execution.attemptId = next.attemptId;
        execution.gateway = next.gateway;
        execution.name = next.name;
        execution.state = "CREATED";
        delete execution.result;
        delete execution.failureCause;
        delete execution.serializers;
        this.byAttempt.set(execution.attemptId.toString(), execution);
      });
    }
  }

  // ---------------------------------------------------------------------------- serializers

  /**
   * A producer and a consumer of `execution` (itself one of them) that both reported their
   * serializers and disagree on an edge between them: each process resolves the edge's
   * serializer name against its own code, and bytes written by one serializer do not decode
   * with another (Flink's serializer compatibility check, by the serializers' names).
   */
  private serializerMismatchOf(
    execution: ExecutionVertex,
  ): { consumer: ExecutionVertex; error: SerializationError } | undefined {
    const { vertex, subtaskIndex } = execution;
    const pairs: [ExecutionVertex, JobEdge, ExecutionVertex][] = [];
    for (const edge of this.graph.inputsOf(vertex)) {
      for (const producer of consumedPartitionsOf(edge, subtaskIndex).producers) {
        pairs.push([this.subtasksOf(edge.source)[producer] as ExecutionVertex, edge, execution]);
      }
    }
    for (const edge of this.graph.outputsOf(vertex)) {
      for (const consumer of this.subtasksOf(edge.target)) {
        if (consumedPartitionsOf(edge, consumer.subtaskIndex).producers.includes(subtaskIndex)) {
          pairs.push([execution, edge, consumer]);
        }
      }
    }
    for (const [producer, edge, consumer] of pairs) {
      const output = this.graph.producedDataSetsOf(edge.source).indexOf(edge.dataSet);
      const written = producer.serializers?.produced[output];
      const read = consumer.serializers?.consumed[this.graph.inputsOf(edge.target).indexOf(edge)];
      if (written === undefined || read === undefined || written === read) continue;
      return {
        consumer,
        error: new SerializationError(
          `serializer mismatch on the edge ${edge.source.name} -> ${edge.target.name} (data set ${edge.resultId}, serializer "${edge.serializer}"): ${producer.name} on ${describeLocation(producer.gateway.location)} writes with ${written}, ${consumer.name} on ${describeLocation(consumer.gateway.location)} reads with ${read}; register the same serializer under "${edge.serializer}" in every process`,
        ),
      };
    }
    return undefined;
  }

  // ---------------------------------------------------------------------------- checkpoints

  /** Every running source to trigger and every task to wait for, or why not now. */
  private calculateCheckpointPlan(): CheckpointPlan | string {
    if (this.currentStatus !== "RUNNING") return `job ${this.graph.name} is ${this.currentStatus}`;
    const executions = this.executionVertices;
    const notRunning = executions.find((execution) => execution.state !== "RUNNING");
    if (notRunning !== undefined) return `${notRunning.name} is ${notRunning.state}`;
    return {
      tasksToTrigger: executions
        .filter((execution) => this.graph.inputsOf(execution.vertex).length === 0)
        .map((execution) => ({
          executionAttemptId: execution.attemptId,
          // Checked when the source was deployed.
          gateway: execution.gateway as Required<Pick<TaskExecutorGateway, "triggerCheckpoint">>,
          name: execution.name,
        })),
      tasksToWaitFor: executions.map((execution) => ({
        executionAttemptId: execution.attemptId,
        vertexId: execution.vertex.id,
        vertexName: execution.vertex.name,
        subtaskIndex: execution.subtaskIndex,
      })),
    };
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
    const ready: JobVertex[] = [];
    for (const region of this.regions) {
      if (region.some((vertex) => this.deployedVertices.has(vertex))) continue;
      if (this.isRegionReady(region, ready)) ready.push(...region);
    }
    if (this.order === "consumers-first") ready.reverse();
    for (const vertex of ready) this.deployedVertices.add(vertex);
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

  /**
   * Whether a region's inputs from other regions are ready: every producer subtask of a blocking
   * data set FINISHED (its partitions complete), the producer of any other input deployed or
   * about to be (`deploying`). Edges inside the region do not count, as in Flink: a consumer there
   * that reads a blocking data set asks for it early and is served once it is complete.
   */
  private isRegionReady(region: readonly JobVertex[], deploying: readonly JobVertex[]): boolean {
    return region.every((vertex) =>
      this.graph.inputsOf(vertex).every((edge) => {
        if (region.includes(edge.source)) return true;
        if (edge.partitionType.isBlocking) {
          return this.subtasksOf(edge.source).every((producer) => producer.state === "FINISHED");
        }
        return this.deployedVertices.has(edge.source) || deploying.includes(edge.source);
      }),
    );
  }

  private async deploy(execution: ExecutionVertex): Promise<void> {
    const { vertex, subtaskIndex, gateway, attemptId } = execution;
    // The job may stop or restart while this deployment awaits: then it must not go on.
    const stale = () => this.currentStatus !== "RUNNING" || !execution.attemptId.equals(attemptId);
    const produced = [];
    const newlyRegistered: RegisteredPartition[] = [];
    for (const dataSet of this.graph.producedDataSetsOf(vertex)) {
      const partitionDescriptor = this.partitionDescriptor(dataSet, subtaskIndex);
      const descriptor = await this.master.registerPartitionWithProducer(
        this.jobId,
        partitionDescriptor,
        {
          producerLocation: gateway.location.resourceId,
          producerExecutionId: execution.attemptId,
          address: gateway.location.host,
          dataPort: gateway.location.dataPort,
        },
      );
      const registered = { dataSet, descriptor };
      this.partitions.set(partitionDescriptor.partitionId.toString(), registered);
      newlyRegistered.push(registered);
      produced.push({
        deployment: createResultPartitionDeploymentDescriptor(
          partitionDescriptor,
          descriptor,
          firstConsumerOf(dataSet).target.maxParallelism,
        ),
        serializer: dataSet.serializer,
        partitioner: dataSet.partitioner,
      });
    }
    const inputGates = this.graph.inputsOf(vertex).map((edge) => {
      const consumed = consumedPartitionsOf(edge, subtaskIndex);
      const descriptors = consumed.producers.map((producer) =>
        this.descriptorForConsumer(edge, producer, execution),
      );
      return {
        deployment: createInputGateDeploymentDescriptor(
          edge.resultId,
          edge.partitionType,
          consumed.subpartitions,
          descriptors,
        ),
        serializer: edge.serializer,
      };
    });
    const descriptor: TaskDeploymentDescriptor = createTaskDeploymentDescriptor({
      jobId: this.jobId,
      jobName: this.graph.name,
      executionAttemptId: execution.attemptId,
      taskName: vertex.name,
      numberOfSubtasks: vertex.parallelism,
      ...(vertex.invokable === undefined ? {} : { invokable: vertex.invokable }),
      producedPartitions: produced,
      inputGates,
      taskConfiguration: vertex.configuration,
      ...(this.checkpointing === undefined ? {} : { checkpointingMode: this.checkpointing.mode }),
      ...(this.checkpointing?.unalignedCheckpointsEnabled === true &&
      this.checkpointing.mode === CheckpointingMode.EXACTLY_ONCE
        ? {
            unalignedCheckpoints: {
              alignedCheckpointTimeoutMs: this.checkpointing.alignedCheckpointTimeout,
            },
          }
        : {}),
      ...this.taskRestoreOf(execution),
    });
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
      if (!execution.attemptId.equals(attemptId) || TERMINAL.has(execution.state)) return;
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
    for (const registered of newlyRegistered) await this.updateWaitingConsumers(registered);
  }

  /** The restore part of a subtask's descriptor after a restart from a completed checkpoint. */
  private taskRestoreOf(execution: ExecutionVertex): Pick<TaskDeploymentDescriptor, "taskRestore"> {
    const checkpoint = this.restoredFrom;
    if (checkpoint === undefined) return {};
    const state = checkpoint.stateOf(execution.vertex.id, execution.subtaskIndex);
    return {
      taskRestore: {
        checkpointId: checkpoint.checkpointId,
        ...(state?.stateHandle === undefined ? {} : { stateHandle: state.stateHandle }),
      },
    };
  }

  /** The real descriptor when the producer is registered; else an unknown one, updated later. */
  private descriptorForConsumer(
    edge: JobEdge,
    producerSubtask: number,
    consumer: ExecutionVertex,
  ): ShuffleDescriptor {
    const partitionId = partitionIdOf(edge, producerSubtask);
    const registered = this.partitions.get(partitionId.toString());
    if (registered !== undefined) return registered.descriptor;
    const producer = this.subtasksOf(edge.source)[producerSubtask] as ExecutionVertex;
    const key = partitionId.toString();
    this.pendingUpdates.set(key, [...(this.pendingUpdates.get(key) ?? []), { consumer, edge }]);
    return createUnknownShuffleDescriptor(new ResultPartitionID(partitionId, producer.attemptId));
  }

  private async updateWaitingConsumers(registered: RegisteredPartition): Promise<void> {
    const key = registered.descriptor.resultPartitionId.partitionId.toString();
    const waiting = this.pendingUpdates.get(key) ?? [];
    this.pendingUpdates.delete(key);
    for (const { consumer, edge } of waiting) {
      if (TERMINAL.has(consumer.state)) continue;
      await consumer.gateway.updatePartitions(consumer.attemptId, [
        createPartitionInfo(edge.resultId, registered.descriptor),
      ]);
    }
  }

  /** Every consumer of a data set reads it alike (JobGraph checks), so the first one shapes it. */
  private partitionDescriptor(
    dataSet: IntermediateDataSet,
    producerSubtask: number,
  ): PartitionDescriptor {
    const consumer = firstConsumerOf(dataSet);
    return {
      resultId: dataSet.id,
      totalNumberOfPartitions: dataSet.producer.parallelism,
      partitionId: partitionIdOf(dataSet, producerSubtask),
      partitionType: dataSet.partitionType,
      numberOfSubpartitions: numberOfSubpartitions(consumer, producerSubtask),
      connectionIndex: 0,
      isBroadcast: dataSet.partitioner.name === "BROADCAST",
      isAllToAllDistribution: consumer.distributionPattern === "ALL_TO_ALL",
    };
  }

  private subtasksOf(vertex: JobVertex): ExecutionVertex[] {
    return this.vertices.get(vertex) ?? [];
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
    this.currentStatus = "RESTARTING";
    this.rootCause = cause;
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
    this.partitions.clear();
    this.pendingUpdates.clear();
    this.deployedVertices.clear();
    this.failedTaskName = undefined;
    this.failedTaskLocation = undefined;
    this.rootCause = undefined;
    this.currentStatus = "RUNNING";
    this.checkpointCoordinator?.startCheckpointScheduler();
    await this.schedule();
  }

  private stop(status: "FAILING" | "CANCELLING", cause: Error): void {
    const restarting = this.currentStatus === "RESTARTING";
    if (this.currentStatus !== "RUNNING" && this.currentStatus !== "CREATED" && !restarting) {
      return;
    }
    this.currentStatus = status;
    this.rootCause = cause;
    this.checkpointCoordinator?.stopCheckpointScheduler();
    clearTimeout(this.restartDelay);
    this.cancelExecutions();
    this.checkTerminated();
  }

  /** Cancels every task that has not ended (the deployment of one being deployed does it). */
  private cancelExecutions(): void {
    for (const execution of this.executionVertices) {
      if (TERMINAL.has(execution.state)) continue;
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
      if (!execution.attemptId.equals(attemptId) || TERMINAL.has(execution.state)) return;
      execution.state = isSluiceError(error, ErrorCodes.TASK_NOT_FOUND) ? "CANCELED" : "FAILED";
      this.checkTerminated();
    });
  }

  private checkTerminated(): void {
    const all = this.executionVertices;
    if (this.currentStatus === "RESTARTING") {
      if (all.every((execution) => TERMINAL.has(execution.state))) {
        const wake = this.wakeRestart;
        this.wakeRestart = undefined;
        wake?.();
      }
      return;
    }
    if (this.currentStatus === "RUNNING") {
      if (!all.every((execution) => execution.state === "FINISHED")) return;
      this.currentStatus = "FINISHED";
    } else if (this.currentStatus === "FAILING" || this.currentStatus === "CANCELLING") {
      if (!all.every((execution) => TERMINAL.has(execution.state))) return;
      this.currentStatus = this.currentStatus === "FAILING" ? "FAILED" : "CANCELED";
    } else {
      return;
    }
    if (this.terminating) return;
    this.terminating = true;
    // A restart waiting for its delay or for tasks gives up (it sees the new status).
    this.wakeRestart?.();
    void this.release().then(() => this.resolveTerminated(this.result()));
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
  private async releasePartitions(): Promise<Error[]> {
    const errors: Error[] = [];
    const byWorker = new Map<string, { gateway: TaskExecutorGateway; ids: ResultPartitionID[] }>();
    const gateways = new Map(
      this.executionVertices
        .filter((e) => !this.lostGateways.has(e.gateway))
        .map((e) => [e.gateway.location.resourceId.toString(), e.gateway]),
    );
    for (const { descriptor } of this.partitions.values()) {
      try {
        this.master.releasePartitionExternally(descriptor);
      } catch (error) {
        errors.push(error as Error);
      }
      const holder = descriptor.storesLocalResourcesOn?.toString();
      const gateway = holder === undefined ? undefined : gateways.get(holder);
      if (holder === undefined || gateway === undefined) continue;
      if (this.lostTaskExecutors.has(holder)) continue;
      const entry = byWorker.get(holder) ?? { gateway, ids: [] };
      entry.ids.push(descriptor.resultPartitionId);
      byWorker.set(holder, entry);
    }
    this.partitions.clear();
    for (const { gateway, ids } of byWorker.values()) {
      try {
        await gateway.releasePartitions(this.jobId, ids);
      } catch (error) {
        errors.push(error as Error);
      }
    }
    return errors;
  }

  private result(): JobResult {
    const results = new Map<string, (JsonValue | undefined)[]>();
    for (const [vertex, subtasks] of this.vertices) {
      results.set(
        vertex.name,
        subtasks.map((execution) => execution.result),
      );
    }
    const status = this.currentStatus as JobResult["status"];
    const coordinator = this.checkpointCoordinator;
    const latest = coordinator?.latestCompletedCheckpoint;
    return {
      jobId: this.jobId,
      status,
      ...(this.rootCause === undefined ? {} : { error: this.rootCause }),
      ...(this.failedTaskName === undefined ? {} : { failedTask: this.failedTaskName }),
      ...(this.failedTaskLocation === undefined
        ? {}
        : { failedTaskLocation: this.failedTaskLocation }),
      results,
      releaseErrors: this.releaseErrors,
      checkpoints: {
        completed: coordinator?.numberOfCompletedCheckpoints ?? 0,
        aborted: coordinator?.numberOfAbortedCheckpoints ?? 0,
        ...(this.restoredFrom === undefined
          ? {}
          : {
              restoredFrom: this.restoredFrom.checkpointId,
              restoredPersistedDataBytes: this.restoredFrom.persistedDataBytes,
            }),
        ...(latest === undefined ? {} : { latest }),
      },
      restarts: this.attemptNumber,
    };
  }
}

/** The first edge that reads `dataSet` (the JobExecution refuses data sets without one). */
function firstConsumerOf(dataSet: IntermediateDataSet): JobEdge {
  const [first] = dataSet.consumers;
  if (first === undefined) {
    throw new IllegalArgumentError(
      `data set ${dataSet.id} of "${dataSet.producer.name}" has no consumer`,
    );
  }
  return first;
}

function describeLocation(location: TaskManagerLocation): string {
  return `TaskExecutor ${location.resourceId} (${location.host}:${location.dataPort})`;
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

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
