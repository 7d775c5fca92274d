import type {
  SchedulingExecutionVertex,
  SchedulingPipelinedRegion,
  SchedulingResultPartition,
} from "./failover/scheduling-pipelined-region.js";
import type { SchedulingTopology } from "./failover/scheduling-topology.js";

/** Whether producers or consumers of a pipelined edge are deployed first. */
export type DeploymentOrder = "producers-first" | "consumers-first";

/**
 * Decides which subtasks to deploy next (Flink's `PipelinedRegionSchedulingStrategy` over the
 * topology's `SchedulingPipelinedRegion`s): the subtasks of a pipelined region are scheduled
 * together, once every blocking partition the region reads from another region is available —
 * its producer FINISHED and the partition still tracked — and every other input's producer is
 * scheduled. So a batch job runs stage by stage, no pipelined producer is deployed before the
 * consumer that drains it can be, and a region that re-runs after a failover is deployed again
 * once its inputs are.
 */
export class PipelinedRegionSchedulingStrategy {
  private readonly topology: SchedulingTopology;
  private readonly order: DeploymentOrder;
  private readonly isAvailable: (partition: SchedulingResultPartition) => boolean;
  private readonly scheduled = new Set<SchedulingPipelinedRegion>();

  /** `isAvailable` tells whether a blocking partition is complete and can be read. */
  constructor(
    topology: SchedulingTopology,
    order: DeploymentOrder,
    isAvailable: (partition: SchedulingResultPartition) => boolean,
  ) {
    this.topology = topology;
    this.order = order;
    this.isAvailable = isAvailable;
  }

  /**
   * The subtasks of every region not scheduled yet whose inputs are ready, in deployment order
   * (by vertex, producers or consumers first, then by subtask); they count as scheduled from now
   * on.
   */
  nextVerticesToDeploy(): SchedulingExecutionVertex[] {
    const ready: SchedulingPipelinedRegion[] = [];
    for (const region of this.topology.regions) {
      if (this.scheduled.has(region)) continue;
      if (this.isRegionReady(region, ready)) ready.push(region);
    }
    for (const region of ready) this.scheduled.add(region);
    const direction = this.order === "consumers-first" ? -1 : 1;
    return ready
      .flatMap((region) => region.vertices)
      .sort(
        (a, b) =>
          direction * (a.topologicalIndex - b.topologicalIndex) || a.subtaskIndex - b.subtaskIndex,
      );
  }

  /** Whether `region` was scheduled (and not restarted since). */
  isScheduled(region: SchedulingPipelinedRegion): boolean {
    return this.scheduled.has(region);
  }

  /** Forgets that `regions` (default: all) were scheduled: a restart deploys them again. */
  restartScheduling(regions: Iterable<SchedulingPipelinedRegion> = this.topology.regions): void {
    for (const region of regions) this.scheduled.delete(region);
  }

  /**
   * Whether a region's inputs from other regions are ready: every blocking partition available,
   * the producer of any other input scheduled or about to be (`deploying`). Partitions produced
   * inside the region do not count, as in Flink: a consumer there that reads a blocking partition
   * asks for it early and is served once it is complete.
   */
  private isRegionReady(
    region: SchedulingPipelinedRegion,
    deploying: readonly SchedulingPipelinedRegion[],
  ): boolean {
    return region.consumedPartitions.every((partition) => {
      if (partition.dataSet.partitionType.isBlocking) return this.isAvailable(partition);
      const producer = this.topology.regionOf(partition.producer);
      return this.scheduled.has(producer) || deploying.includes(producer);
    });
  }
}
