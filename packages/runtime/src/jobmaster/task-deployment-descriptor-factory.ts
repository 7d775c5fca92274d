import { IllegalArgumentError } from "@sluice/core";
import {
  createInputGateDeploymentDescriptor,
  createResultPartitionDeploymentDescriptor,
  type PartitionDescriptor,
  type ShuffleDescriptor,
} from "@sluice/runtime-api";
import { CheckpointingMode } from "../messages/checkpointing-mode.js";
import {
  createTaskDeploymentDescriptor,
  type ProducedPartitionSpec,
  type TaskDeploymentDescriptor,
} from "../messages/task-deployment-descriptor.js";
import type { CheckpointCoordinatorConfiguration } from "./checkpoints/checkpoint-coordinator-configuration.js";
import type { CompletedCheckpoint } from "./checkpoints/completed-checkpoint.js";
import { StateAssignmentOperation } from "./checkpoints/state-assignment-operation.js";
import type { ExecutionVertex } from "./execution-vertex.js";
import {
  consumedPartitionsOf,
  type IntermediateDataSet,
  type JobEdge,
  type JobGraph,
  numberOfSubpartitions,
  partitionIdOf,
} from "./job-graph.js";

/**
 * Builds what a subtask is deployed with (Flink's `TaskDeploymentDescriptorFactory`): the
 * descriptors of the partitions it produces and of the gates it reads, its serializers and
 * partitioners, the job's checkpointing settings, and, after a restart from a checkpoint, the
 * snapshot it restores.
 */
export class TaskDeploymentDescriptorFactory {
  private readonly graph: JobGraph;
  private readonly checkpointing: CheckpointCoordinatorConfiguration | undefined;
  private readonly leadershipEpoch: string | undefined;
  /** The state assignment of the checkpoint restored last (one per restored checkpoint). */
  private assignment: StateAssignmentOperation | undefined;

  /**
   * Refuses a graph with a data set nobody reads: its partitions could not be shaped.
   * `leadershipEpoch` goes into every descriptor (see `TaskDeploymentDescriptor.leadershipEpoch`).
   */
  constructor(
    graph: JobGraph,
    checkpointing: CheckpointCoordinatorConfiguration | undefined,
    leadershipEpoch?: string,
  ) {
    for (const dataSet of graph.dataSets) {
      if (dataSet.consumers.length === 0) {
        throw new IllegalArgumentError(
          `data set ${dataSet.id} of "${dataSet.producer.name}" in job ${graph.name} has no consumer; connect one with connectDataSet`,
        );
      }
    }
    this.graph = graph;
    this.checkpointing = checkpointing;
    this.leadershipEpoch = leadershipEpoch;
  }

  /**
   * The partition `producerSubtask` produces of `dataSet`, to register with the ShuffleMaster.
   * Every consumer of a data set reads it alike (JobGraph checks), so the first one shapes it.
   */
  partitionDescriptor(dataSet: IntermediateDataSet, producerSubtask: number): PartitionDescriptor {
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

  /** What the descriptor says of a partition the ShuffleMaster registered as `descriptor`. */
  producedPartition(
    dataSet: IntermediateDataSet,
    partition: PartitionDescriptor,
    descriptor: ShuffleDescriptor,
  ): ProducedPartitionSpec {
    return {
      deployment: createResultPartitionDeploymentDescriptor(
        partition,
        descriptor,
        firstConsumerOf(dataSet).target.maxParallelism,
      ),
      serializer: dataSet.serializer,
      partitioner: dataSet.partitioner,
    };
  }

  /**
   * The descriptor of `execution`'s current attempt: `produced` are its registered partitions,
   * `consumed` gives the descriptor of the partition of producer subtask `producer` it reads on
   * `edge`, and `restoredFrom` is the checkpoint a restart restores.
   */
  createDeploymentDescriptor(
    execution: ExecutionVertex,
    produced: readonly ProducedPartitionSpec[],
    consumed: (edge: JobEdge, producer: number) => ShuffleDescriptor,
    restoredFrom: CompletedCheckpoint | undefined,
  ): TaskDeploymentDescriptor {
    const { vertex, subtaskIndex } = execution;
    const checkpointing = this.checkpointing;
    const inputGates = this.graph.inputsOf(vertex).map((edge) => {
      const partitions = consumedPartitionsOf(edge, subtaskIndex);
      return {
        deployment: createInputGateDeploymentDescriptor(
          edge.resultId,
          edge.partitionType,
          partitions.subpartitions,
          partitions.producers.map((producer) => consumed(edge, producer)),
        ),
        serializer: edge.serializer,
      };
    });
    return createTaskDeploymentDescriptor({
      jobId: this.graph.jobId,
      jobName: this.graph.name,
      executionAttemptId: execution.attemptId,
      ...(this.leadershipEpoch === undefined ? {} : { leadershipEpoch: this.leadershipEpoch }),
      taskName: vertex.name,
      numberOfSubtasks: vertex.parallelism,
      maxParallelism: vertex.maxParallelism,
      ...(vertex.invokable === undefined ? {} : { invokable: vertex.invokable }),
      ...(this.graph.userCodeModule === undefined
        ? {}
        : { userCodeModule: this.graph.userCodeModule }),
      producedPartitions: produced,
      inputGates,
      taskConfiguration: vertex.configuration,
      ...(checkpointing === undefined ? {} : { checkpointingMode: checkpointing.mode }),
      ...(checkpointing?.unalignedCheckpointsEnabled === true &&
      checkpointing.mode === CheckpointingMode.EXACTLY_ONCE
        ? {
            unalignedCheckpoints: {
              alignedCheckpointTimeoutMs: checkpointing.alignedCheckpointTimeout,
            },
          }
        : {}),
      ...(checkpointing?.checkpointsAfterTasksFinish === true
        ? { checkpointsAfterTasksFinish: true }
        : {}),
      ...this.taskRestoreOf(execution, restoredFrom),
    });
  }

  /**
   * Which state of `checkpoint` each subtask restores (see {@link StateAssignmentOperation}),
   * decided once per checkpoint.
   *
   * @throws StateAssignmentError when the checkpoint does not fit the job (a max parallelism
   *   that changed, state that cannot be redistributed to a new parallelism).
   */
  assignmentOf(checkpoint: CompletedCheckpoint): StateAssignmentOperation {
    if (this.assignment?.checkpoint !== checkpoint) {
      this.assignment = new StateAssignmentOperation(checkpoint, this.graph);
    }
    return this.assignment;
  }

  /** The restore part of a subtask's descriptor after a restart from a completed checkpoint. */
  private taskRestoreOf(
    execution: ExecutionVertex,
    checkpoint: CompletedCheckpoint | undefined,
  ): Pick<TaskDeploymentDescriptor, "taskRestore"> {
    if (checkpoint === undefined) return {};
    const restore = this.assignmentOf(checkpoint).restoreOf(
      execution.vertex,
      execution.subtaskIndex,
    );
    return restore === undefined ? {} : { taskRestore: restore };
  }
}

/** The first edge that reads `dataSet` (the factory refuses data sets without one). */
function firstConsumerOf(dataSet: IntermediateDataSet): JobEdge {
  const [first] = dataSet.consumers;
  if (first === undefined) {
    throw new IllegalArgumentError(
      `data set ${dataSet.id} of "${dataSet.producer.name}" has no consumer`,
    );
  }
  return first;
}
