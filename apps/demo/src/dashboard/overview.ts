import type { RegisteredTaskManager } from "@sluice/cluster";
import { CheckpointStatsTracker, type JobExecution, type JobGraph } from "@sluice/runtime";
import { backPressureLevel } from "./backpressure-level.js";
import type { JobOverview, SubtaskOverview, SubtaskRates, VertexOverview } from "./job-overview.js";
import type { MetricFetcher } from "./metric-fetcher.js";
import { vertexColour } from "./vertex-colour.js";

/**
 * What the job manager role knows about its job, for {@link buildJobOverview}: the overview's job
 * fields but its name (the graph's), and the graph and execution the vertices come from.
 */
export interface JobStatus extends Omit<JobOverview["job"], "name"> {
  readonly graph: JobGraph;
  /** The running job, once deployed. */
  readonly execution: JobExecution | undefined;
}

/** The rates of a subtask that is not running (or has not reported metrics yet). */
const NO_RATES: SubtaskRates = {
  recordsInPerSecond: 0,
  recordsOutPerSecond: 0,
  bytesInPerSecond: 0,
  bytesOutPerSecond: 0,
  busyTimeMsPerSecond: 0,
  idleTimeMsPerSecond: 0,
  backPressuredTimeMsPerSecond: 0,
};

/** The dashboard's view of the job now: the graph, each subtask's state and its metrics. */
export function buildJobOverview(status: JobStatus, fetcher: MetricFetcher): JobOverview {
  const fetched = new Map(fetcher.subtasks.map((subtask) => [subtask.attemptId, subtask]));
  const vertices: VertexOverview[] = status.graph.vertices.map((vertex) => {
    const executions = (status.execution?.executionVertices ?? []).filter(
      (execution) => execution.vertex === vertex,
    );
    const hasInputs = status.graph.edges.some((edge) => edge.target === vertex);
    const hasOutputs = status.graph.edges.some((edge) => edge.source === vertex);
    const subtasks: SubtaskOverview[] = [];
    for (let index = 0; index < vertex.parallelism; index++) {
      const execution = executions.find((e) => e.subtaskIndex === index);
      const attemptId = execution?.attemptId.toString();
      const metrics = attemptId === undefined ? undefined : fetched.get(attemptId);
      const running = execution?.state === "RUNNING" && metrics !== undefined;
      const rates = running ? fetcher.ratesOf(attemptId as string) : undefined;
      const usage = (name: string) => {
        const entry = metrics?.values.get(name);
        return entry === undefined ? null : (entry.value ?? 0);
      };
      const backPressured = rates?.backPressuredTimeMsPerSecond ?? 0;
      subtasks.push({
        subtaskIndex: index,
        state: execution?.state ?? "CREATED",
        taskManager: (execution?.gateway as RegisteredTaskManager | undefined)?.index ?? -1,
        ...(rates ?? NO_RATES),
        backPressureLevel: backPressureLevel(backPressured),
        inPoolUsage: hasInputs ? usage("inPoolUsage") : null,
        outPoolUsage: hasOutputs ? usage("outPoolUsage") : null,
      });
    }
    const worst = Math.max(0, ...subtasks.map((s) => s.backPressuredTimeMsPerSecond));
    const busiest = Math.max(0, ...subtasks.map((s) => s.busyTimeMsPerSecond));
    const sum = (pick: (s: SubtaskOverview) => number) =>
      subtasks.reduce((total, s) => total + pick(s), 0);
    return {
      id: vertex.id.toString(),
      name: vertex.name,
      parallelism: vertex.parallelism,
      backPressureLevel: backPressureLevel(worst),
      backPressuredTimeMsPerSecond: worst,
      busyTimeMsPerSecond: busiest,
      colour: vertexColour(busiest, worst),
      recordsInPerSecond: sum((s) => s.recordsInPerSecond),
      recordsOutPerSecond: sum((s) => s.recordsOutPerSecond),
      subtasks,
    };
  });
  return {
    job: {
      name: status.graph.name,
      state: status.state,
      rootCause: status.rootCause,
      elapsedSeconds: status.elapsedSeconds,
      totalRecords: status.totalRecords,
      records: status.records,
      throttle: status.throttle,
      shuffle: status.shuffle,
    },
    vertices,
    checkpoints:
      status.execution?.checkpointCoordinator === undefined
        ? null
        : new CheckpointStatsTracker(status.execution).snapshot(),
    edges: status.graph.edges.map((edge) => ({
      source: edge.source.id.toString(),
      target: edge.target.id.toString(),
      shipStrategy: edge.partitioner.name,
    })),
  };
}
