import type { IntermediateResultPartitionID } from "@sluice/core";
import { IllegalArgumentError } from "@sluice/core";
import {
  consumedPartitionsOf,
  type JobGraph,
  type JobVertex,
  partitionIdOf,
} from "../job-graph.js";
import { cyclesOf } from "../strongly-connected-components.js";
import type {
  SchedulingExecutionVertex,
  SchedulingPipelinedRegion,
  SchedulingResultPartition,
} from "./scheduling-pipelined-region.js";

interface MutableRegion extends SchedulingPipelinedRegion {
  readonly vertices: SchedulingExecutionVertex[];
  readonly consumedPartitions: SchedulingResultPartition[];
  readonly producedPartitions: SchedulingResultPartition[];
}

/**
 * The job at the level of subtasks and their partitions (Flink's `SchedulingTopology`), with its
 * pipelined regions: the subtasks that partitions of a pipelined type connect (by the edge's
 * distribution pattern) are one region; regions that would wait for each other through a cycle
 * of edges are merged into one, as Flink's `SchedulingPipelinedRegionComputeUtil` does.
 */
export class SchedulingTopology {
  /** Every subtask, in topological order and by subtask index. */
  readonly vertices: readonly SchedulingExecutionVertex[];
  /** The regions, ordered by their first subtask. */
  readonly regions: readonly SchedulingPipelinedRegion[];
  private readonly byVertex = new Map<JobVertex, SchedulingExecutionVertex[]>();
  private readonly partitions = new Map<string, SchedulingResultPartition>();
  private readonly regionByVertex = new Map<SchedulingExecutionVertex, SchedulingPipelinedRegion>();

  constructor(graph: JobGraph) {
    const vertices: SchedulingExecutionVertex[] = [];
    graph.topologicalOrder().forEach((vertex, topologicalIndex) => {
      const subtasks = Array.from({ length: vertex.parallelism }, (_, subtaskIndex) => ({
        vertex,
        subtaskIndex,
        topologicalIndex,
      }));
      this.byVertex.set(vertex, subtasks);
      vertices.push(...subtasks);
    });
    this.vertices = vertices;
    for (const dataSet of graph.dataSets) {
      const consumers = Array.from(
        { length: dataSet.producer.parallelism },
        () => new Set<SchedulingExecutionVertex>(),
      );
      for (const edge of dataSet.consumers) {
        for (const consumer of this.subtasksOf(edge.target)) {
          for (const producer of consumedPartitionsOf(edge, consumer.subtaskIndex).producers) {
            consumers[producer]?.add(consumer);
          }
        }
      }
      for (const producer of this.subtasksOf(dataSet.producer)) {
        const id = partitionIdOf(dataSet, producer.subtaskIndex);
        this.partitions.set(id.toString(), {
          id,
          dataSet,
          producer,
          consumers: [...(consumers[producer.subtaskIndex] ?? [])],
        });
      }
    }
    this.regions = this.computeRegions();
  }

  /** The subtasks of `vertex`, by subtask index. */
  subtasksOf(vertex: JobVertex): readonly SchedulingExecutionVertex[] {
    return this.byVertex.get(vertex) ?? [];
  }

  /** Subtask `subtaskIndex` of `vertex`. */
  executionVertex(vertex: JobVertex, subtaskIndex: number): SchedulingExecutionVertex {
    const found = this.byVertex.get(vertex)?.[subtaskIndex];
    if (found === undefined) {
      throw new IllegalArgumentError(
        `the job has no subtask ${subtaskIndex + 1} of vertex "${vertex.name}"`,
      );
    }
    return found;
  }

  /** The partition with the id `id`; `undefined` for a partition of another job. */
  resultPartition(id: IntermediateResultPartitionID): SchedulingResultPartition | undefined {
    return this.partitions.get(id.toString());
  }

  /** Every partition of the job. */
  get resultPartitions(): Iterable<SchedulingResultPartition> {
    return this.partitions.values();
  }

  /** The region `vertex` belongs to. */
  regionOf(vertex: SchedulingExecutionVertex): SchedulingPipelinedRegion {
    return this.regionByVertex.get(vertex) as SchedulingPipelinedRegion;
  }

  private computeRegions(): SchedulingPipelinedRegion[] {
    const parent = new Map<SchedulingExecutionVertex, SchedulingExecutionVertex>(
      this.vertices.map((vertex) => [vertex, vertex]),
    );
    const find = (vertex: SchedulingExecutionVertex): SchedulingExecutionVertex => {
      let root = vertex;
      while (parent.get(root) !== root) root = parent.get(root) as SchedulingExecutionVertex;
      parent.set(vertex, root);
      return root;
    };
    const union = (a: SchedulingExecutionVertex, b: SchedulingExecutionVertex) => {
      parent.set(find(a), find(b));
    };
    for (const partition of this.partitions.values()) {
      if (!partition.dataSet.partitionType.isPipelined) continue;
      for (const consumer of partition.consumers) union(partition.producer, consumer);
    }
    const successors = new Map<SchedulingExecutionVertex, Set<SchedulingExecutionVertex>>();
    for (const partition of this.partitions.values()) {
      const from = find(partition.producer);
      for (const consumer of partition.consumers) {
        const to = find(consumer);
        if (from !== to) successors.set(from, (successors.get(from) ?? new Set()).add(to));
      }
    }
    const roots = new Set(this.vertices.map(find));
    for (const cycle of cyclesOf(roots, (root) => successors.get(root) ?? [])) {
      for (const root of cycle) union(root, cycle[0] as SchedulingExecutionVertex);
    }
    const byRoot = new Map<SchedulingExecutionVertex, MutableRegion>();
    for (const vertex of this.vertices) {
      const root = find(vertex);
      let region = byRoot.get(root);
      if (region === undefined) {
        region = { vertices: [], consumedPartitions: [], producedPartitions: [] };
        byRoot.set(root, region);
      }
      region.vertices.push(vertex);
      this.regionByVertex.set(vertex, region);
    }
    for (const partition of this.partitions.values()) {
      const producerRegion = this.regionByVertex.get(partition.producer) as MutableRegion;
      producerRegion.producedPartitions.push(partition);
      const readers = new Set(partition.consumers.map((c) => this.regionByVertex.get(c)));
      for (const reader of readers) {
        if (reader !== producerRegion) (reader as MutableRegion).consumedPartitions.push(partition);
      }
    }
    return [...byRoot.values()];
  }
}
