import type { JobGraph, JobVertex } from "./job-graph.js";

/** Whether producers or consumers of a pipelined edge are deployed first. */
export type DeploymentOrder = "producers-first" | "consumers-first";

/**
 * Decides which job vertices to deploy next (Flink's `PipelinedRegionSchedulingStrategy` over
 * the graph's `SchedulingPipelinedRegion`s, per job vertex): the vertices of a pipelined region
 * ({@link JobGraph.pipelinedRegions}) are scheduled together, once every blocking data set the
 * region reads from another region is complete — all its producer subtasks FINISHED — and every
 * other input's producer is scheduled. So a batch job runs stage by stage, and no pipelined
 * producer is deployed before the consumer that drains it can be.
 */
export class PipelinedRegionSchedulingStrategy {
  private readonly graph: JobGraph;
  private readonly order: DeploymentOrder;
  private readonly regions: readonly (readonly JobVertex[])[];
  private readonly isFinished: (vertex: JobVertex) => boolean;
  private readonly scheduled = new Set<JobVertex>();

  /** `isFinished` tells whether every subtask of a vertex FINISHED (its partitions complete). */
  constructor(graph: JobGraph, order: DeploymentOrder, isFinished: (vertex: JobVertex) => boolean) {
    this.graph = graph;
    this.order = order;
    this.regions = graph.pipelinedRegions();
    this.isFinished = isFinished;
  }

  /**
   * The vertices of every region not scheduled yet whose inputs are ready, in deployment
   * order; they count as scheduled from now on.
   */
  nextVerticesToDeploy(): JobVertex[] {
    const ready: JobVertex[] = [];
    for (const region of this.regions) {
      if (region.some((vertex) => this.scheduled.has(vertex))) continue;
      if (this.isRegionReady(region, ready)) ready.push(...region);
    }
    if (this.order === "consumers-first") ready.reverse();
    for (const vertex of ready) this.scheduled.add(vertex);
    return ready;
  }

  /** Forgets what was scheduled: a restart deploys every region again. */
  restartScheduling(): void {
    this.scheduled.clear();
  }

  /**
   * Whether a region's inputs from other regions are ready: every producer subtask of a blocking
   * data set FINISHED (its partitions complete), the producer of any other input scheduled or
   * about to be (`deploying`). Edges inside the region do not count, as in Flink: a consumer there
   * that reads a blocking data set asks for it early and is served once it is complete.
   */
  private isRegionReady(region: readonly JobVertex[], deploying: readonly JobVertex[]): boolean {
    return region.every((vertex) =>
      this.graph.inputsOf(vertex).every((edge) => {
        if (region.includes(edge.source)) return true;
        if (edge.partitionType.isBlocking) return this.isFinished(edge.source);
        return this.scheduled.has(edge.source) || deploying.includes(edge.source);
      }),
    );
  }
}
