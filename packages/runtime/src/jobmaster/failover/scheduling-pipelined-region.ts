import type { IntermediateResultPartitionID } from "@sluice/core";
import type { IntermediateDataSet, JobVertex } from "../job-graph.js";

/**
 * One subtask of the job as the scheduler and the failover see it (Flink's
 * `SchedulingExecutionVertex` by its `ExecutionVertexID`): a vertex and a subtask index, one
 * object per subtask, so sets of them compare by identity.
 */
export interface SchedulingExecutionVertex {
  readonly vertex: JobVertex;
  readonly subtaskIndex: number;
  /** Where it is in the graph's topological order: producers come before their consumers. */
  readonly topologicalIndex: number;
}

/**
 * One partition of a data set (Flink's `SchedulingResultPartition`): the partition producer
 * subtask `producer` writes, and every subtask that reads it, through any edge.
 */
export interface SchedulingResultPartition {
  readonly id: IntermediateResultPartitionID;
  readonly dataSet: IntermediateDataSet;
  readonly producer: SchedulingExecutionVertex;
  readonly consumers: readonly SchedulingExecutionVertex[];
}

/**
 * Subtasks that exchange data while it is produced, so they run, and fail over, together
 * (Flink's `SchedulingPipelinedRegion`). A pipelined ALL_TO_ALL edge joins every subtask of both
 * vertices; a pipelined POINTWISE edge only the subtasks it connects; a BLOCKING edge joins none,
 * so with blocking edges each subtask may be a region of its own.
 */
export interface SchedulingPipelinedRegion {
  /** The region's subtasks, in topological order and by subtask index. */
  readonly vertices: readonly SchedulingExecutionVertex[];
  /** The partitions its subtasks read that other regions produce (the inputs it waits for). */
  readonly consumedPartitions: readonly SchedulingResultPartition[];
  /** The partitions its subtasks produce. */
  readonly producedPartitions: readonly SchedulingResultPartition[];
}
