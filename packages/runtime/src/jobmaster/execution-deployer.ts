import { IllegalStateError } from "@sluice/core";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import { isTerminal } from "../messages/task-execution-state.js";
import { asError } from "../util/as-error.js";
import type { CheckpointCoordinatorConfiguration } from "./checkpoints/checkpoint-coordinator-configuration.js";
import type { ExecutionGraph } from "./execution-graph.js";
import type { ExecutionVertex } from "./execution-vertex.js";
import type { JobGraph } from "./job-graph.js";
import type { JobMasterPartitionTracker } from "./job-master-partition-tracker.js";
import type { TaskDeploymentDescriptorFactory } from "./task-deployment-descriptor-factory.js";

/** What the {@link ExecutionDeployer} needs of its job. */
export interface ExecutionDeployerContext {
  /** The gateway the deployed tasks report to. */
  readonly jobMaster: JobMasterGateway;
  /** Whether the job stopped or failed over `execution` since version `version` was deployed. */
  isStale(execution: ExecutionVertex, version: number): boolean;
  /** The TaskExecutor refused `execution` (it is FAILED): the job decides what follows. */
  submitFailed(execution: ExecutionVertex, cause: Error, restoredCheckpoint?: bigint): void;
  /** The job cannot run as deployed: it fails with `cause`. */
  fail(cause: Error): void;
  /** Cancels the task of `execution` on its TaskExecutor. */
  cancelExecution(execution: ExecutionVertex): void;
}

/**
 * Deploys one subtask's attempt (Flink's `DefaultExecutionDeployer`): registers the partitions it
 * produces with the ShuffleMaster, builds its deployment descriptor, submits it to its
 * TaskExecutor, and then tells consumers deployed before it where its partitions are.
 */
export class ExecutionDeployer {
  private readonly graph: JobGraph;
  private readonly executions: ExecutionGraph;
  private readonly partitions: JobMasterPartitionTracker;
  private readonly descriptors: TaskDeploymentDescriptorFactory;
  private readonly checkpointing: CheckpointCoordinatorConfiguration | undefined;
  private readonly context: ExecutionDeployerContext;
  /** Executions whose `submitTask` has not answered yet. */
  private readonly submitting = new Set<ExecutionVertex>();

  constructor(
    executions: ExecutionGraph,
    partitions: JobMasterPartitionTracker,
    descriptors: TaskDeploymentDescriptorFactory,
    checkpointing: CheckpointCoordinatorConfiguration | undefined,
    context: ExecutionDeployerContext,
  ) {
    this.graph = executions.graph;
    this.executions = executions;
    this.partitions = partitions;
    this.descriptors = descriptors;
    this.checkpointing = checkpointing;
    this.context = context;
  }

  /** Whether `submitTask` of `execution` has not answered yet (the task may not exist there). */
  isSubmitting(execution: ExecutionVertex): boolean {
    return this.submitting.has(execution);
  }

  /** Deploys `execution`'s current attempt, taken at `version`, unless it goes stale first. */
  async deploy(execution: ExecutionVertex, version: number): Promise<void> {
    const { context } = this;
    const { vertex, gateway, attemptId } = execution;
    // The job may stop or fail over while this deployment awaits: then it must not go on.
    const stale = () =>
      !execution.attemptId.equals(attemptId) || context.isStale(execution, version);
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
          this.executions.subtasksOf(edge.source)[producer] as ExecutionVertex,
          execution,
        ),
      execution.restoreFrom,
    );
    if (stale()) return;
    if (
      this.checkpointing !== undefined &&
      gateway.triggerCheckpoint === undefined &&
      this.graph.inputsOf(vertex).length === 0
    ) {
      execution.state = "FAILED";
      context.fail(
        new IllegalStateError(
          `job ${this.graph.name} takes checkpoints, but the TaskExecutorGateway of ${execution.name} (${gateway.location.resourceId}) does not forward triggerCheckpoint`,
        ),
      );
      return;
    }
    execution.state = "DEPLOYING";
    this.submitting.add(execution);
    try {
      await gateway.submitTask(descriptor, context.jobMaster);
    } catch (error) {
      this.submitting.delete(execution);
      // Not deployed: nothing runs there that could report, so the attempt fails here.
      if (!execution.attemptId.equals(attemptId) || isTerminal(execution.state)) return;
      execution.state = "FAILED";
      context.submitFailed(execution, asError(error), descriptor.taskRestore?.checkpointId);
      return;
    }
    this.submitting.delete(execution);
    if (stale()) {
      // Stopped while the task was being deployed, so nobody canceled it yet (it did not exist
      // there): cancel it now; its final report ends this attempt.
      context.cancelExecution(execution);
      return;
    }
    for (const registered of newlyRegistered) await this.partitions.updateConsumersOf(registered);
  }
}
