import {
  CancelledError,
  ErrorCodes,
  ExecutionAttemptID,
  ExecutionGraphID,
  type IntermediateDataSetID,
  isSluiceError,
  type JobID,
  PartitionNotFoundError,
  ResultPartitionID,
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
import { deserializeThrowable } from "../taskexecutor/serialized-throwable.js";
import {
  createTaskDeploymentDescriptor,
  type TaskDeploymentDescriptor,
} from "../taskexecutor/task-deployment-descriptor.js";
import type { TaskExecutionState } from "../taskexecutor/task-execution-state.js";
import type { TaskExecutorGateway } from "../taskexecutor/task-executor-gateway.js";
import type { Placement } from "./job-deployer.js";
import {
  consumedPartitionsOf,
  type JobEdge,
  type JobGraph,
  type JobVertex,
  numberOfSubpartitions,
  partitionIdOf,
} from "./job-graph.js";
import type { JobMasterGateway } from "./job-master-gateway.js";

/** Whether producers or consumers of a pipelined edge are deployed first. */
export type DeploymentOrder = "producers-first" | "consumers-first";

/** The states of a job (Flink's `JobStatus`, the ones this runtime reaches). */
export type JobStatus =
  | "CREATED"
  | "RUNNING"
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
  /** The root cause of a failed or canceled job. */
  readonly error?: Error;
  /** The task whose failure failed the job, as `Name (i/n)#a`. */
  readonly failedTask?: string;
  /** What each vertex's subtasks returned, by vertex name, in subtask order. */
  readonly results: ReadonlyMap<string, readonly (JsonValue | undefined)[]>;
  /** Errors while releasing the job's partitions at its end (the job's outcome stands). */
  readonly releaseErrors: readonly Error[];
}

/** One subtask of the job and where it stands (Flink's `ExecutionVertex` + `Execution`). */
export interface ExecutionVertex {
  readonly vertex: JobVertex;
  readonly subtaskIndex: number;
  readonly attemptId: ExecutionAttemptID;
  readonly gateway: TaskExecutorGateway;
  /** The task name Flink prints. */
  readonly name: string;
  /** The last state the task reported (or the job side decided). */
  state: ExecutionState;
  /** What the task's invokable returned, once FINISHED. */
  result?: JsonValue;
  /** Why the task failed or was canceled, as it reported. */
  failureCause?: Error;
}

interface RegisteredPartition {
  readonly edge: JobEdge;
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
 */
export class JobExecution implements JobMasterGateway {
  /** The job. */
  readonly jobId: JobID;
  /** The deployed graph. */
  readonly graph: JobGraph;
  /** Resolves once every task ended and the job's partitions were released. */
  readonly terminated: Promise<JobResult>;

  private readonly master: ShuffleMaster;
  private readonly order: DeploymentOrder;
  private readonly executionGraphId = new ExecutionGraphID();
  private readonly vertices = new Map<JobVertex, ExecutionVertex[]>();
  private readonly byAttempt = new Map<string, ExecutionVertex>();
  private readonly deployedVertices = new Set<JobVertex>();
  private readonly partitions = new Map<string, RegisteredPartition>();
  private readonly pendingUpdates = new Map<string, PendingUpdate[]>();
  private currentStatus: JobStatus = "CREATED";
  private rootCause: Error | undefined;
  private failedTask: string | undefined;
  private scheduling: Promise<void> = Promise.resolve();
  private resolveTerminated!: (result: JobResult) => void;

  constructor(
    graph: JobGraph,
    master: ShuffleMaster,
    placement: Placement,
    order: DeploymentOrder,
  ) {
    this.graph = graph;
    this.jobId = graph.jobId;
    this.master = master;
    this.order = order;
    this.terminated = new Promise((resolve) => {
      this.resolveTerminated = resolve;
    });
    for (const vertex of graph.vertices) {
      const subtasks: ExecutionVertex[] = [];
      for (let i = 0; i < vertex.parallelism; i++) {
        const attemptId = new ExecutionAttemptID(this.executionGraphId, vertex.id, i, 0);
        const execution: ExecutionVertex = {
          vertex,
          subtaskIndex: i,
          attemptId,
          gateway: placement(vertex, i),
          name: `${vertex.name} (${i + 1}/${vertex.parallelism})#0`,
          state: "CREATED",
        };
        subtasks.push(execution);
        this.byAttempt.set(attemptId.toString(), execution);
      }
      this.vertices.set(vertex, subtasks);
    }
  }

  /** The job's state. */
  get status(): JobStatus {
    return this.currentStatus;
  }

  /** Every subtask of the job, vertex by vertex. */
  get executionVertices(): readonly ExecutionVertex[] {
    return [...this.vertices.values()].flat();
  }

  /** Registers the job with the master and deploys the vertices that are ready. */
  async start(): Promise<void> {
    this.master.registerJob({
      jobId: this.jobId,
      stopTrackingAndReleasePartitions: async (ids) => {
        this.fail(
          new PartitionNotFoundError(`the shuffle master lost the partitions ${ids.join(", ")}`),
        );
      },
    });
    this.currentStatus = "RUNNING";
    await this.schedule();
  }

  updateTaskExecutionState(update: TaskExecutionState): void {
    const execution = this.byAttempt.get(update.executionAttemptId.toString());
    if (execution === undefined || TERMINAL.has(execution.state)) return;
    execution.state = update.state;
    if (update.result !== undefined) execution.result = update.result;
    if (update.error !== undefined) execution.failureCause = deserializeThrowable(update.error);
    switch (update.state) {
      case "FINISHED":
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

  /** Cancels the job: every task is canceled; the job ends CANCELED. Idempotent. */
  cancel(reason = `job ${this.graph.name} was canceled`): void {
    this.stop("CANCELLING", new CancelledError(reason));
  }

  /** Fails the job with `cause` (e.g. a lost TaskExecutor): every task is canceled. */
  fail(cause: Error): void {
    this.stop("FAILING", cause);
  }

  /**
   * A TaskExecutor is gone (its process died, its heartbeats stopped): its tasks count as failed
   * with `cause`, and the job fails.
   */
  notifyTaskExecutorLost(gateway: TaskExecutorGateway, cause: Error): void {
    let first: ExecutionVertex | undefined;
    for (const execution of this.executionVertices) {
      if (execution.gateway !== gateway || TERMINAL.has(execution.state)) continue;
      execution.state = "FAILED";
      execution.failureCause = cause;
      first ??= execution;
    }
    if (first !== undefined) this.failTask(first, cause);
    else this.fail(cause);
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
    const ready: JobVertex[] = [];
    for (const vertex of this.graph.topologicalOrder()) {
      if (this.deployedVertices.has(vertex)) continue;
      const inputsReady = this.graph
        .inputsOf(vertex)
        .every((edge) =>
          edge.partitionType.isBlocking
            ? this.subtasksOf(edge.source).every((producer) => producer.state === "FINISHED")
            : this.deployedVertices.has(edge.source) || ready.includes(edge.source),
        );
      if (inputsReady) ready.push(vertex);
    }
    if (this.order === "consumers-first") ready.reverse();
    for (const vertex of ready) this.deployedVertices.add(vertex);
    try {
      for (const vertex of ready) {
        for (const execution of this.subtasksOf(vertex)) {
          if (this.currentStatus !== "RUNNING") return;
          await this.deploy(execution);
        }
      }
    } catch (error) {
      this.fail(error instanceof Error ? error : new Error(String(error)));
      this.checkTerminated();
    }
  }

  private async deploy(execution: ExecutionVertex): Promise<void> {
    const { vertex, subtaskIndex, gateway } = execution;
    const produced = [];
    const newlyRegistered: RegisteredPartition[] = [];
    for (const edge of this.graph.outputsOf(vertex)) {
      const partitionDescriptor = this.partitionDescriptor(edge, subtaskIndex);
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
      const registered = { edge, descriptor };
      this.partitions.set(partitionDescriptor.partitionId.toString(), registered);
      newlyRegistered.push(registered);
      produced.push({
        deployment: createResultPartitionDeploymentDescriptor(
          partitionDescriptor,
          descriptor,
          edge.target.maxParallelism,
        ),
        serializer: edge.serializer,
        partitioner: edge.partitioner,
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
    });
    execution.state = "DEPLOYING";
    try {
      await gateway.submitTask(descriptor, this);
    } catch (error) {
      // Not deployed: nothing runs there that could report, so the attempt fails here.
      execution.state = "FAILED";
      this.failTask(execution, error instanceof Error ? error : new Error(String(error)));
      return;
    }
    for (const registered of newlyRegistered) await this.updateWaitingConsumers(registered);
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

  private partitionDescriptor(edge: JobEdge, producerSubtask: number): PartitionDescriptor {
    return {
      resultId: edge.resultId,
      totalNumberOfPartitions: edge.source.parallelism,
      partitionId: partitionIdOf(edge, producerSubtask),
      partitionType: edge.partitionType,
      numberOfSubpartitions: numberOfSubpartitions(edge, producerSubtask),
      connectionIndex: 0,
      isBroadcast: edge.partitioner.name === "BROADCAST",
      isAllToAllDistribution: edge.distributionPattern === "ALL_TO_ALL",
    };
  }

  private subtasksOf(vertex: JobVertex): ExecutionVertex[] {
    return this.vertices.get(vertex) ?? [];
  }

  // ------------------------------------------------------------------------------- failures

  private failTask(execution: ExecutionVertex, cause: Error): void {
    if (this.currentStatus === "RUNNING") this.failedTask = execution.name;
    this.stop("FAILING", cause);
  }

  private stop(status: "FAILING" | "CANCELLING", cause: Error): void {
    if (this.currentStatus !== "RUNNING" && this.currentStatus !== "CREATED") return;
    this.currentStatus = status;
    this.rootCause = cause;
    for (const execution of this.executionVertices) {
      if (TERMINAL.has(execution.state)) continue;
      if (execution.state === "CREATED") {
        execution.state = "CANCELED";
        continue;
      }
      execution.gateway.cancelTask(execution.attemptId).catch((error: unknown) => {
        // A task that ended sent its final report before this reply, so a task still not
        // terminal here never ran there; one whose TaskExecutor cannot be reached cannot report.
        // Either way the job must not wait for it.
        if (TERMINAL.has(execution.state)) return;
        execution.state = isSluiceError(error, ErrorCodes.TASK_NOT_FOUND) ? "CANCELED" : "FAILED";
        this.checkTerminated();
      });
    }
    this.checkTerminated();
  }

  private checkTerminated(): void {
    const all = this.executionVertices;
    if (this.currentStatus === "RUNNING") {
      if (!all.every((execution) => execution.state === "FINISHED")) return;
      this.currentStatus = "FINISHED";
    } else if (this.currentStatus === "FAILING" || this.currentStatus === "CANCELLING") {
      if (!all.every((execution) => TERMINAL.has(execution.state))) return;
      this.currentStatus = this.currentStatus === "FAILING" ? "FAILED" : "CANCELED";
    } else {
      return;
    }
    void this.release().then((releaseErrors) => this.resolveTerminated(this.result(releaseErrors)));
  }

  /** Releases every partition of the job on the master and on the workers that hold them. */
  private async release(): Promise<Error[]> {
    await this.scheduling;
    const errors: Error[] = [];
    const byWorker = new Map<string, { gateway: TaskExecutorGateway; ids: ResultPartitionID[] }>();
    const gateways = new Map(
      this.executionVertices.map((e) => [e.gateway.location.resourceId.toString(), e.gateway]),
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
      const entry = byWorker.get(holder) ?? { gateway, ids: [] };
      entry.ids.push(descriptor.resultPartitionId);
      byWorker.set(holder, entry);
    }
    for (const { gateway, ids } of byWorker.values()) {
      try {
        await gateway.releasePartitions(this.jobId, ids);
      } catch (error) {
        errors.push(error as Error);
      }
    }
    this.master.unregisterJob(this.jobId);
    return errors;
  }

  private result(releaseErrors: Error[]): JobResult {
    const results = new Map<string, (JsonValue | undefined)[]>();
    for (const [vertex, subtasks] of this.vertices) {
      results.set(
        vertex.name,
        subtasks.map((execution) => execution.result),
      );
    }
    const status = this.currentStatus as JobResult["status"];
    return {
      jobId: this.jobId,
      status,
      ...(this.rootCause === undefined ? {} : { error: this.rootCause }),
      ...(this.failedTask === undefined ? {} : { failedTask: this.failedTask }),
      results,
      releaseErrors,
    };
  }
}
