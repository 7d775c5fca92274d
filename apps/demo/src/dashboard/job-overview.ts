import type { CheckpointStatsSnapshot } from "@sluice/runtime";
import type { BackPressureLevel } from "./backpressure-level.js";
import type { VertexColour } from "./vertex-colour.js";

/**
 * What the dashboard shows, as the job manager sends it to the page once a second (`GET
 * /api/overview`, and each event of `GET /api/events`). Per-second values cover the last
 * second, from the metrics' counts and accumulated times, so that a change shows at once;
 * the Prometheus endpoint exports Flink's 60-second meters.
 */
export interface JobOverview {
  readonly job: {
    readonly name: string;
    /**
     * `CREATED` until it is deployed, then the job's state; after the job ended its final one
     * (`FINISHED`, `FAILED`, `CANCELED`), which the last event before the job manager closes
     * carries.
     */
    readonly state: string;
    /** Why the job failed or was canceled (the root cause, with its task); `null` otherwise. */
    readonly rootCause: string | null;
    /** Seconds since it was deployed (0 before). */
    readonly elapsedSeconds: number;
    /** Words the job will move in total. */
    readonly totalRecords: number;
    /** Words the counters received so far. */
    readonly records: number;
    /** The counters' throttle in words per second per subtask; `null`: none. */
    readonly throttle: number | null;
    /** The shuffle plugin. */
    readonly shuffle: string;
  };
  readonly vertices: readonly VertexOverview[];
  /** The job's checkpoint statistics; `null` when it takes no checkpoints. */
  readonly checkpoints: CheckpointStatsSnapshot | null;
  readonly edges: readonly {
    readonly source: string;
    readonly target: string;
    /** How records are distributed (`HASH`). */
    readonly shipStrategy: string;
  }[];
}

/** One vertex of the job graph. */
export interface VertexOverview {
  readonly id: string;
  readonly name: string;
  readonly parallelism: number;
  /** The level of its most back-pressured running subtask. */
  readonly backPressureLevel: BackPressureLevel;
  /** The highest `backPressuredTimeMsPerSecond` of its subtasks. */
  readonly backPressuredTimeMsPerSecond: number;
  /** The highest `busyTimeMsPerSecond` of its subtasks. */
  readonly busyTimeMsPerSecond: number;
  /** Its colour in the job graph, by busy time and back-pressure as Flink's web UI colours. */
  readonly colour: VertexColour;
  readonly recordsInPerSecond: number;
  readonly recordsOutPerSecond: number;
  readonly subtasks: readonly SubtaskOverview[];
}

/** Per-second values of one subtask over the last second, from its counts and accumulated times. */
export interface SubtaskRates {
  readonly recordsInPerSecond: number;
  readonly recordsOutPerSecond: number;
  readonly bytesInPerSecond: number;
  readonly bytesOutPerSecond: number;
  readonly busyTimeMsPerSecond: number;
  readonly idleTimeMsPerSecond: number;
  readonly backPressuredTimeMsPerSecond: number;
}

/** One subtask of a vertex. */
export interface SubtaskOverview extends SubtaskRates {
  readonly subtaskIndex: number;
  /** `RUNNING`, `FINISHED`, ... */
  readonly state: string;
  /** The task manager it runs on (its index), or -1 before it is deployed. */
  readonly taskManager: number;
  readonly backPressureLevel: BackPressureLevel;
  /** `inPoolUsage` (0–1), `null` for a task without inputs. */
  readonly inPoolUsage: number | null;
  /** `outPoolUsage` (0–1), `null` for a task without outputs. */
  readonly outPoolUsage: number | null;
}
