import type { ResultPartitionType } from "@sluice/runtime-api";
import type {
  SchedulingExecutionVertex,
  SchedulingPipelinedRegion,
  SchedulingResultPartition,
} from "./scheduling-pipelined-region.js";
import type { SchedulingTopology } from "./scheduling-topology.js";

/**
 * When a blocking partition may be released (Flink's `RegionPartitionGroupReleaseStrategy`): as
 * soon as every region that reads it has finished — every subtask of each FINISHED — and no
 * earlier. A region that re-runs (a failover) counts as unfinished again, so the partitions it
 * reads are kept for it from then on; those already released are produced again.
 */
export class RegionPartitionGroupReleaseStrategy {
  private readonly topology: SchedulingTopology;
  private readonly finished = new Set<SchedulingExecutionVertex>();

  constructor(topology: SchedulingTopology) {
    this.topology = topology;
  }

  /**
   * `vertex` FINISHED: the blocking partitions produced elsewhere that its region read and that no
   * region still needs (every region reading them finished), to release now. A persistent
   * partition (BLOCKING_PERSISTENT) is never among them: it stays until the job releases it.
   */
  vertexFinished(vertex: SchedulingExecutionVertex): SchedulingResultPartition[] {
    this.finished.add(vertex);
    const region = this.topology.regionOf(vertex);
    if (!this.isFinished(region)) return [];
    return region.consumedPartitions.filter(
      ({ dataSet, consumers }) =>
        isReleasedEarly(dataSet.partitionType) &&
        consumers.every((consumer) => this.isFinished(this.topology.regionOf(consumer))),
    );
  }

  /** `vertex` re-runs: its region is not finished any more. */
  vertexUnfinished(vertex: SchedulingExecutionVertex): void {
    this.finished.delete(vertex);
  }

  private isFinished(region: SchedulingPipelinedRegion): boolean {
    return region.vertices.every((vertex) => this.finished.has(vertex));
  }
}

/** A partition the scheduler releases once consumed: blocking, and not persistent. */
function isReleasedEarly(type: ResultPartitionType): boolean {
  return type.isBlocking && type.releasedBy === "scheduler" && !type.isPersistent;
}
