import type { IntermediateResultPartitionID } from "@sluice/core";
import { findPartitionException } from "./partition-exception.js";
import type {
  SchedulingExecutionVertex,
  SchedulingPipelinedRegion,
} from "./scheduling-pipelined-region.js";
import type { SchedulingTopology } from "./scheduling-topology.js";

/**
 * Whether a partition can still be read (Flink's `ResultPartitionAvailabilityChecker`): the job
 * side's partition tracker still tracks it (its worker was not lost, nobody reported it lost).
 */
export type ResultPartitionAvailabilityChecker = (id: IntermediateResultPartitionID) => boolean;

/**
 * Which subtasks re-run when one fails (Flink's `RestartPipelinedRegionFailoverStrategy`): the
 * failed subtask's region; every region that consumes a partition a re-run region produces
 * (its data is produced again, so every reader reads it again); and the producer region of every
 * partition a re-run region reads that is no longer available: a pipelined partition (consumed
 * once), a blocking one that was lost with its worker or released, or the one the failure's
 * partition error names. Regions whose outputs are still available are not re-run.
 */
export class RestartPipelinedRegionFailoverStrategy {
  private readonly topology: SchedulingTopology;
  private readonly isTracked: ResultPartitionAvailabilityChecker;
  private readonly failedPartitions = new Set<string>();

  /** By default every partition counts as tracked (as Flink's test constructor does). */
  constructor(
    topology: SchedulingTopology,
    isTracked: ResultPartitionAvailabilityChecker = () => true,
  ) {
    this.topology = topology;
    this.isTracked = isTracked;
  }

  /**
   * The subtasks to restart because `failed` failed with `cause`, in topological order. A
   * partition error among the causes marks the partition it names as unavailable for this
   * decision, so its producer re-runs.
   */
  getTasksNeedingRestart(
    failed: SchedulingExecutionVertex,
    cause: unknown,
  ): SchedulingExecutionVertex[] {
    const partitionError = findPartitionException(cause);
    const failedPartition = partitionError?.partitionId.partitionId.toString();
    if (failedPartition !== undefined) this.failedPartitions.add(failedPartition);
    try {
      const regions = this.getRegionsToRestart(this.topology.regionOf(failed));
      return this.topology.vertices.filter((vertex) => regions.has(this.topology.regionOf(vertex)));
    } finally {
      // The partition is produced again by the restart: it is not failed for the next decision.
      if (failedPartition !== undefined) this.failedPartitions.delete(failedPartition);
    }
  }

  /** Whether a partition a re-run region reads can be read again without re-producing it. */
  private isAvailable(id: IntermediateResultPartitionID): boolean {
    const partition = this.topology.resultPartition(id);
    return (
      partition?.dataSet.partitionType.isReconsumable === true &&
      !this.failedPartitions.has(id.toString()) &&
      this.isTracked(id)
    );
  }

  private getRegionsToRestart(failed: SchedulingPipelinedRegion): Set<SchedulingPipelinedRegion> {
    const visited = new Set<SchedulingPipelinedRegion>([failed]);
    const toVisit = [failed];
    const involve = (region: SchedulingPipelinedRegion) => {
      if (visited.has(region)) return;
      visited.add(region);
      toVisit.push(region);
    };
    for (let region = toVisit.shift(); region !== undefined; region = toVisit.shift()) {
      for (const partition of region.consumedPartitions) {
        if (!this.isAvailable(partition.id)) involve(this.topology.regionOf(partition.producer));
      }
      for (const partition of region.producedPartitions) {
        for (const consumer of partition.consumers) involve(this.topology.regionOf(consumer));
      }
    }
    return visited;
  }
}
