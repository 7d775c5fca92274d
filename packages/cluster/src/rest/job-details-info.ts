/**
 * The REST endpoint's job bodies, in Flink's REST API shapes and field names where Flink has them
 * (`JobDetailsInfo`, `JobDetailsVertexInfo`, `SubtaskExecutionAttemptDetailsInfo`, `IOMetricsInfo`,
 * `JobDetails` of `/jobs/overview`), with Sluice's additions in the same style: per-second values,
 * back-pressure levels and the dashboard's vertex colours.
 */
import type { JobStatus } from "@sluice/runtime";
import type { ExecutionState } from "@sluice/runtime-api";
import type { VertexColour } from "./vertex-colour.js";

/**
 * A job's state as the REST API shows it (Flink's `JobStatus`): the runtime's, or INITIALIZING
 * for a job the job manager takes over and has not deployed yet (Flink's Dispatcher lists a job
 * whose JobMaster does not run yet so).
 */
export type RestJobStatus = JobStatus | "INITIALIZING";

/** Flink's back-pressure levels as its REST API writes them. */
export type BackPressureLevelName = "ok" | "low" | "high";

/** Counts of a vertex's or job's subtasks by state (Flink's `status-counts`, `tasks`). */
export type StatusCounts = Readonly<Record<ExecutionState, number>>;

/** A subtask's or vertex's counters (Flink's `IOMetricsInfo`). */
export interface IOMetricsInfo {
  readonly "read-bytes": number;
  /** Whether every subtask reported it (false until all of them did). */
  readonly "read-bytes-complete": boolean;
  readonly "write-bytes": number;
  readonly "write-bytes-complete": boolean;
  readonly "read-records": number;
  readonly "read-records-complete": boolean;
  readonly "write-records": number;
  readonly "write-records-complete": boolean;
  /** Milliseconds spent back-pressured (waiting for an output buffer), summed. */
  readonly "accumulated-backpressured-time": number;
  readonly "accumulated-idle-time": number;
  readonly "accumulated-busy-time": number;
}

/** Per-second values over the last metric fetches (Sluice). */
export interface RatesInfo {
  readonly "read-records-per-second": number;
  readonly "write-records-per-second": number;
  readonly "read-bytes-per-second": number;
  readonly "write-bytes-per-second": number;
  /** 0–1000: the share of each second spent busy, back-pressured or idle, in ms. */
  readonly "busy-time-ms-per-second": number;
  readonly "idle-time-ms-per-second": number;
  readonly "backpressured-time-ms-per-second": number;
}

/**
 * When a subtask or a vertex ran (Flink's `start-time`, `end-time` and `duration`), in ms since the
 * epoch: a subtask's start is when its current attempt was deployed and its end when it reached a
 * final state; a vertex's start is its first subtask's start and its end its last subtask's end
 * once every one ended. -1 for a time not reached yet (and a duration without a start).
 */
export interface TimesInfo {
  readonly "start-time": number;
  readonly "end-time": number;
  /** From the start to the end, or to now while it runs. */
  readonly duration: number;
}

/** One subtask (Flink's `SubtaskExecutionAttemptDetailsInfo`), with Sluice's rates. */
export interface SubtaskInfo extends RatesInfo, TimesInfo {
  readonly subtask: number;
  readonly status: ExecutionState;
  /** The current attempt's number (it counts the subtask's restarts). */
  readonly attempt: number;
  /** The TaskExecutor it runs on: `host:dataPort`, `(unassigned)` before it was placed. */
  readonly endpoint: string;
  /** Its TaskExecutor's resource id (`null` before it was placed). */
  readonly "taskmanager-id": string | null;
  readonly metrics: IOMetricsInfo;
  readonly "backpressure-level": BackPressureLevelName;
  /** `inPoolUsage` (0–1); `null` for a task without inputs or before its metrics came. */
  readonly "in-pool-usage": number | null;
  /** `outPoolUsage` (0–1); `null` for a task without outputs or before its metrics came. */
  readonly "out-pool-usage": number | null;
}

/**
 * One vertex (Flink's `JobDetailsVertexInfo`), with its subtasks and Sluice's figures. Its
 * records and bytes per second are its subtasks' sums; its busy, idle and back-pressured times
 * per second are those of its busiest, idlest and most back-pressured subtask.
 */
export interface VertexInfo extends RatesInfo, TimesInfo {
  readonly id: string;
  readonly name: string;
  readonly parallelism: number;
  readonly maxParallelism: number;
  /** The vertex's state, from its subtasks' (Flink's `ExecutionJobVertex.getAggregateState`). */
  readonly status: ExecutionState;
  readonly tasks: StatusCounts;
  readonly metrics: IOMetricsInfo;
  /** The level of its most back-pressured subtask. */
  readonly "backpressure-level": BackPressureLevelName;
  /** Its colour in the dashboard's graph, by busy and back-pressured time as Flink's web UI. */
  readonly colour: VertexColour;
  readonly subtasks: readonly SubtaskInfo[];
}

/** An edge of the plan: which vertex a vertex reads, and how (Flink's plan `inputs`). */
export interface PlanInput {
  readonly num: number;
  /** The producing vertex's id. */
  readonly id: string;
  /** The partitioner: `HASH`, `FORWARD`, `REBALANCE`, … */
  readonly ship_strategy: string;
  /** `pipelined_bounded`, `blocking`, … */
  readonly exchange: string;
}

/** The job's plan (Flink's `JobPlanInfo`): its vertices and what each reads. */
export interface PlanInfo {
  readonly jid: string;
  readonly name: string;
  readonly nodes: readonly {
    readonly id: string;
    readonly parallelism: number;
    readonly description: string;
    readonly inputs?: readonly PlanInput[];
  }[];
}

/** `GET /jobs/:jobid` (Flink's `JobDetailsInfo`). */
export interface JobDetailsInfo {
  readonly jid: string;
  readonly name: string;
  readonly state: RestJobStatus;
  /**
   * When the job was deployed, or when the job manager began to take it over (ms since the
   * epoch).
   */
  readonly "start-time": number;
  /** When it ended; -1 while it runs. */
  readonly "end-time": number;
  /** Milliseconds from start to end, or to now while it runs. */
  readonly duration: number;
  /** When this body was made. */
  readonly now: number;
  /** When the job first reached each state it went through. */
  readonly timestamps: Readonly<Partial<Record<RestJobStatus, number>>>;
  readonly "status-counts": StatusCounts;
  readonly vertices: readonly VertexInfo[];
  readonly plan: PlanInfo;
  /** Why the job failed or was canceled, with its task (Sluice); `null` otherwise. */
  readonly "root-cause": string | null;
  /** How many times the job restarted (Sluice; Flink's `numRestarts` metric). */
  readonly restarts: number;
}

/** One entry of `GET /jobs/overview` (Flink's `JobDetails`). */
export interface JobOverviewInfo {
  readonly jid: string;
  readonly name: string;
  readonly state: RestJobStatus;
  readonly "start-time": number;
  readonly "end-time": number;
  readonly duration: number;
  /** When its state last changed. */
  readonly "last-modification": number;
  /** Its subtasks by state, and `total`. */
  readonly tasks: Readonly<Record<Lowercase<ExecutionState> | "total", number>>;
}
