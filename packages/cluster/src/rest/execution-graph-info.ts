import type { JobExecution, JobGraph, JobResult } from "@sluice/runtime";
import { MetricNames } from "@sluice/runtime";
import type { ExecutionState } from "@sluice/runtime-api";
import type { InitializingJob } from "../dispatcher.js";
import { type BackPressureLevel, backPressureLevel } from "./back-pressure-level.js";
import {
  type CheckpointingStatistics,
  checkpointingStatisticsOf,
} from "./checkpointing-statistics.js";
import type {
  BackPressureLevelName,
  IOMetricsInfo,
  JobDetailsInfo,
  JobOverviewInfo,
  RatesInfo,
  RestJobStatus,
  StatusCounts,
  SubtaskInfo,
  TimesInfo,
  VertexInfo,
} from "./job-details-info.js";
import {
  type JobExecutionResultInfo,
  type JobExecutionResultResponseBody,
  jobExecutionResultOf,
} from "./job-execution-result-info.js";
import {
  type FetchedSubtask,
  type MetricFetcher,
  NO_RATES,
  type SubtaskRates,
} from "./metric-fetcher.js";
import { metricValue } from "./subtask-metrics.js";
import { vertexColour } from "./vertex-colour.js";

/** One failure of a job (Flink's `ExceptionHistoryEntry`, the fields Sluice has). */
export interface ExceptionHistoryEntry {
  /** The error's name (`TimeoutError`) and, when it has one, its code. */
  readonly exceptionName: string;
  /** Its stack as the task reported it (or its message). */
  readonly stacktrace: string;
  /** When the REST endpoint saw it (ms since the epoch). */
  readonly timestamp: number;
  /** The failed task, `Name (i/n)#a`; `null` when the job failed as a whole. */
  readonly taskName: string | null;
  /** Where the task ran (`host:dataPort`). */
  readonly endpoint: string | null;
  /** Its TaskExecutor's resource id. */
  readonly taskManagerId: string | null;
}

/** `GET /jobs/:jobid/exceptions` (Flink's `JobExceptionsInfoWithHistory`). */
export interface JobExceptionsInfo {
  /** The root cause of the failed or canceled job, with its task; `null` otherwise. */
  readonly "root-exception": string | null;
  /** When the job ended with it. */
  readonly timestamp: number | null;
  readonly exceptionHistory: {
    /** Newest first, at most `web.exception-history-size`. */
    readonly entries: readonly ExceptionHistoryEntry[];
    /** Whether older entries were dropped. */
    readonly truncated: boolean;
  };
}

const EXECUTION_STATES: readonly ExecutionState[] = [
  "CREATED",
  "SCHEDULED",
  "DEPLOYING",
  "INITIALIZING",
  "RUNNING",
  "FINISHED",
  "CANCELING",
  "CANCELED",
  "FAILED",
  "RECONCILING",
];

const FINAL_JOB_STATES: ReadonlySet<RestJobStatus> = new Set(["FINISHED", "FAILED", "CANCELED"]);

/** What the checkpoint statistics read of a job that was never deployed here: nothing. */
const NOT_DEPLOYED = { checkpointCoordinator: undefined, latestRestore: undefined } as const;

/** The subtask states in which a task runs on a TaskExecutor. */
const ON_TASK_EXECUTOR: ReadonlySet<ExecutionState> = new Set([
  "DEPLOYING",
  "INITIALIZING",
  "RUNNING",
]);

/** What a job ended with: the bodies the REST endpoint answers from then on. */
interface Archived {
  readonly details: JobDetailsInfo;
  readonly checkpoints: CheckpointingStatistics;
  readonly exceptions: JobExceptionsInfo;
  readonly result: JobExecutionResultInfo;
}

/**
 * What the REST endpoint knows of one job (Flink's `ExecutionGraphInfo`): while the job runs, its
 * `JobExecution`, read at each request; the times it reached each state and the failures seen
 * meanwhile; once it ended, only its final bodies (details, checkpoints, exceptions) as JSON, and
 * not the job itself, so that nothing of an ended job's runtime stays reachable from here. A job
 * the job manager takes over starts as an {@link InitializingJob} (Flink's sparse archived
 * graph): INITIALIZING, its graph's vertices without subtasks, until {@link attach} gives it its
 * execution, or it ended before that.
 */
export class ExecutionGraphInfo {
  readonly jid: string;
  readonly name: string;
  /** When the job was deployed, or when the job manager began to take it over (ms since the epoch). */
  readonly startTime: number;
  private readonly graph: JobGraph;
  private execution: JobExecution | undefined;
  /** The job being taken over, until it is deployed or ended. */
  private initializing: InitializingJob | undefined;
  private endTime = -1;
  private lastState: RestJobStatus;
  private readonly timestamps: Partial<Record<RestJobStatus, number>> = {};
  private readonly exceptions: ExceptionHistoryEntry[] = [];
  private truncated = false;
  /** The failed attempts already in {@link exceptions} (bounded like it). */
  private readonly seenFailures = new Set<string>();
  private archived: Archived | undefined;
  /**
   * The latest metrics of the job's current attempts: a task's metrics are gone from its task
   * manager once it ended, and the job's final body keeps its last counters.
   */
  private readonly lastMetrics = new Map<string, FetchedSubtask>();

  /**
   * @param job - the job as deployed, or as the job manager takes it over (not deployed yet).
   */
  constructor(
    job: JobExecution | InitializingJob,
    private readonly historySize: number,
    private readonly now: () => number = Date.now,
  ) {
    this.jid = job.jobId.toString();
    this.name = job.graph.name;
    this.graph = job.graph;
    if ("initializedAt" in job) {
      this.initializing = job;
      this.startTime = job.initializedAt;
      this.lastState = this.initializingState(job);
      this.timestamps.INITIALIZING = this.startTime;
      this.timestamps[this.lastState] ??= now();
    } else {
      this.execution = job;
      this.startTime = now();
      this.timestamps.CREATED = this.startTime;
      this.lastState = job.status;
      this.timestamps[job.status] ??= this.startTime;
    }
  }

  /** The job's state now (its final one once ended). */
  get state(): RestJobStatus {
    return (
      this.archived?.details.state ??
      this.execution?.status ??
      (this.initializing === undefined ? this.lastState : this.initializingState(this.initializing))
    );
  }

  /** Whether the job ended. */
  get ended(): boolean {
    return this.archived !== undefined;
  }

  /** The running job; `undefined` before it was deployed and once it ended. */
  get job(): JobExecution | undefined {
    return this.execution;
  }

  /** The job being taken over while it is not deployed yet (INITIALIZING); else `undefined`. */
  get initializingJob(): InitializingJob | undefined {
    return this.initializing;
  }

  /**
   * Why the job does not run (for an answer that needs it running): not deployed yet, or ended;
   * `undefined` while it runs.
   */
  whyNotRunning(): string | undefined {
    if (this.execution !== undefined) return undefined;
    return this.initializing !== undefined
      ? `job ${this.jid} is ${this.state}: the job manager takes it over and has not deployed it yet`
      : `job ${this.jid} has ended (${this.state})`;
  }

  /** The job being taken over was deployed: from now on it shows `execution`. */
  attach(execution: JobExecution): void {
    if (this.archived !== undefined) return;
    this.initializing = undefined;
    this.execution = execution;
    this.timestamps.CREATED ??= this.now();
    this.observe();
  }

  private initializingState(job: InitializingJob): RestJobStatus {
    return job.cancelRequested ? "CANCELLING" : "INITIALIZING";
  }

  /** The TaskExecutors that run a task of the job now (each once). */
  taskExecutors(): JobExecution["executionVertices"][number]["gateway"][] {
    const vertices = this.execution?.executionVertices ?? [];
    return [
      ...new Set(
        vertices.filter((vertex) => ON_TASK_EXECUTOR.has(vertex.state)).map((v) => v.gateway),
      ),
    ];
  }

  /**
   * Notes what changed since the last look: the state (its first time in each) and the subtasks
   * that failed (into the exception history).
   */
  observe(): void {
    if (this.archived !== undefined) return;
    const state = this.state;
    if (state !== this.lastState) {
      this.lastState = state;
      this.timestamps[state] ??= this.now();
    }
    const execution = this.execution;
    if (execution === undefined) return;
    for (const vertex of execution.executionVertices) {
      if (vertex.state !== "FAILED" || vertex.failureCause === undefined) continue;
      const attempt = vertex.attemptId.toString();
      if (this.seenFailures.has(attempt)) continue;
      this.seenFailures.add(attempt);
      const { location } = vertex.gateway;
      this.addException(vertex.failureCause, vertex.name, location);
    }
  }

  /**
   * The job ended with `result`: keeps its final bodies, built from `fetcher`'s last metrics, and
   * lets go of the job. Idempotent.
   */
  archive(result: JobResult, fetcher: MetricFetcher): void {
    if (this.archived !== undefined) return;
    this.observe();
    this.endTime = this.now();
    this.lastState = result.status;
    this.timestamps[result.status] ??= this.endTime;
    const rootCause =
      result.error === undefined
        ? null
        : result.failedTask === undefined
          ? result.error.message
          : `${result.failedTask}: ${result.error.message}`;
    const { error } = result;
    const taskName = result.failedTask ?? null;
    const seen = (e: ExceptionHistoryEntry) =>
      error !== undefined && e.taskName === taskName && e.stacktrace === stackOf(error);
    if (error !== undefined && !this.exceptions.some(seen)) {
      this.addException(error, taskName, result.failedTaskLocation);
    }
    const details = this.buildDetails(fetcher, result.status, rootCause);
    const checkpoints = checkpointingStatisticsOf(this.execution ?? NOT_DEPLOYED);
    this.archived = {
      details,
      checkpoints,
      exceptions: {
        "root-exception": rootCause,
        timestamp: rootCause === null ? null : this.endTime,
        exceptionHistory: { entries: [...this.exceptions], truncated: this.truncated },
      },
      result: jobExecutionResultOf(result, this.endTime - this.startTime),
    };
    this.execution = undefined;
    this.initializing = undefined;
    this.seenFailures.clear();
    this.lastMetrics.clear();
  }

  /** `GET /jobs/:jobid`. */
  details(fetcher: MetricFetcher): JobDetailsInfo {
    if (this.archived !== undefined) return this.archived.details;
    this.observe();
    return this.buildDetails(fetcher, this.state, null);
  }

  /** `GET /jobs/:jobid/checkpoints`. */
  checkpoints(): CheckpointingStatistics {
    if (this.archived !== undefined) return this.archived.checkpoints;
    return checkpointingStatisticsOf(this.execution ?? NOT_DEPLOYED);
  }

  /** `GET /jobs/:jobid/execution-result`. */
  executionResult(): JobExecutionResultResponseBody {
    if (this.archived === undefined) return { status: { id: "IN_PROGRESS" } };
    return { status: { id: "COMPLETED" }, "job-execution-result": this.archived.result };
  }

  /** `GET /jobs/:jobid/exceptions`. */
  exceptionsInfo(): JobExceptionsInfo {
    if (this.archived !== undefined) return this.archived.exceptions;
    this.observe();
    return {
      "root-exception": null,
      timestamp: null,
      exceptionHistory: { entries: [...this.exceptions], truncated: this.truncated },
    };
  }

  /** Its entry of `GET /jobs/overview`. */
  overview(): JobOverviewInfo {
    this.observe();
    const counts = this.archived?.details["status-counts"] ?? this.statusCounts();
    const tasks: Record<string, number> = { total: 0 };
    for (const state of EXECUTION_STATES) {
      tasks[state.toLowerCase()] = counts[state];
      tasks.total = (tasks.total ?? 0) + counts[state];
    }
    const end = this.endTime;
    return {
      jid: this.jid,
      name: this.name,
      state: this.state,
      "start-time": this.startTime,
      "end-time": end,
      duration: (end < 0 ? this.now() : end) - this.startTime,
      "last-modification": Math.max(...Object.values(this.timestamps)),
      tasks: tasks as JobOverviewInfo["tasks"],
    };
  }

  private addException(
    error: Error,
    taskName: string | null,
    location: { resourceId: { toString(): string }; host: string; dataPort: number } | undefined,
  ): void {
    const code = (error as { code?: unknown }).code;
    this.exceptions.unshift({
      exceptionName: typeof code === "string" ? `${error.name} (${code})` : error.name,
      stacktrace: stackOf(error),
      timestamp: this.now(),
      taskName,
      endpoint: location === undefined ? null : `${location.host}:${location.dataPort}`,
      taskManagerId: location === undefined ? null : location.resourceId.toString(),
    });
    if (this.exceptions.length > this.historySize) {
      this.exceptions.length = this.historySize;
      this.truncated = true;
    }
    if (this.seenFailures.size > 4 * this.historySize) {
      this.seenFailures.delete(this.seenFailures.values().next().value as string);
    }
  }

  private statusCounts(): StatusCounts {
    const counts = Object.fromEntries(EXECUTION_STATES.map((s) => [s, 0])) as Record<
      ExecutionState,
      number
    >;
    for (const vertex of this.execution?.executionVertices ?? []) counts[vertex.state]++;
    return counts;
  }

  private buildDetails(
    fetcher: MetricFetcher,
    state: RestJobStatus,
    rootCause: string | null,
  ): JobDetailsInfo {
    const { graph } = this;
    // A job not deployed yet has its graph's vertices and no subtasks (they are CREATED).
    const executionVertices = this.execution?.executionVertices ?? [];
    const current = new Set(executionVertices.map((e) => e.attemptId.toString()));
    for (const attempt of this.lastMetrics.keys()) {
      if (!current.has(attempt)) this.lastMetrics.delete(attempt);
    }
    for (const subtask of fetcher.subtasks) {
      if (current.has(subtask.attemptId)) this.lastMetrics.set(subtask.attemptId, subtask);
    }
    const fetched = this.lastMetrics;
    const vertices: VertexInfo[] = graph.vertices.map((vertex) => {
      const executions = executionVertices.filter((e) => e.vertex === vertex);
      const hasInputs = graph.edges.some((edge) => edge.target === vertex);
      const hasOutputs = graph.edges.some((edge) => edge.source === vertex);
      const subtasks: SubtaskInfo[] = executions.map((e) => {
        const attemptId = e.attemptId.toString();
        const metrics = fetched.get(attemptId);
        const running = e.state === "RUNNING" && metrics !== undefined;
        const rates = running ? fetcher.ratesOf(attemptId) : NO_RATES;
        const usage = (name: string) => {
          const entry = metrics?.values.get(name);
          return entry === undefined ? null : (entry.value ?? 0);
        };
        const placed = e.state !== "CREATED" && e.state !== "SCHEDULED";
        return {
          subtask: e.subtaskIndex,
          status: e.state,
          attempt: e.attemptId.attemptNumber,
          ...subtaskTimes(e.stateTimestamps ?? {}, this.now()),
          endpoint: placed
            ? `${e.gateway.location.host}:${e.gateway.location.dataPort}`
            : "(unassigned)",
          "taskmanager-id": placed ? e.gateway.location.resourceId.toString() : null,
          metrics: ioMetricsOf(
            metrics === undefined ? [] : [metrics],
            metrics === undefined ? 1 : 0,
          ),
          ...ratesInfoOf(rates),
          "backpressure-level": levelName(backPressureLevel(rates.backPressuredTimeMsPerSecond)),
          "in-pool-usage": hasInputs ? usage("inPoolUsage") : null,
          "out-pool-usage": hasOutputs ? usage("outPoolUsage") : null,
        };
      });
      subtasks.sort((a, b) => a.subtask - b.subtask);
      const reported = executions
        .map((e) => fetched.get(e.attemptId.toString()))
        .filter((m): m is FetchedSubtask => m !== undefined);
      const max = (key: keyof RatesInfo) => Math.max(0, ...subtasks.map((s) => s[key]));
      const sum = (key: keyof RatesInfo) => subtasks.reduce((total, s) => total + s[key], 0);
      const worst = max("backpressured-time-ms-per-second");
      const busiest = max("busy-time-ms-per-second");
      const tasks = Object.fromEntries(EXECUTION_STATES.map((s) => [s, 0])) as Record<
        ExecutionState,
        number
      >;
      for (const e of executions) tasks[e.state]++;
      return {
        id: vertex.id.toString(),
        name: vertex.name,
        parallelism: vertex.parallelism,
        maxParallelism: vertex.maxParallelism,
        status: aggregateState(tasks, vertex.parallelism),
        tasks,
        metrics: ioMetricsOf(reported, executions.length - reported.length),
        "read-records-per-second": sum("read-records-per-second"),
        "write-records-per-second": sum("write-records-per-second"),
        "read-bytes-per-second": sum("read-bytes-per-second"),
        "write-bytes-per-second": sum("write-bytes-per-second"),
        "busy-time-ms-per-second": busiest,
        "idle-time-ms-per-second": max("idle-time-ms-per-second"),
        "backpressured-time-ms-per-second": worst,
        "backpressure-level": levelName(backPressureLevel(worst)),
        colour: vertexColour(busiest, worst),
        ...vertexTimes(subtasks, this.now()),
        subtasks,
      };
    });
    const statusCounts = this.statusCounts();
    const now = this.now();
    return {
      jid: this.jid,
      name: this.name,
      state,
      "start-time": this.startTime,
      "end-time": this.endTime,
      duration: (this.endTime < 0 ? now : this.endTime) - this.startTime,
      now,
      timestamps: { ...this.timestamps },
      "status-counts": statusCounts,
      vertices,
      plan: {
        jid: this.jid,
        name: this.name,
        nodes: graph.vertices.map((vertex) => {
          const inputs = graph.edges
            .filter((edge) => edge.target === vertex)
            .map((edge, num) => ({
              num,
              id: edge.source.id.toString(),
              ship_strategy: edge.partitioner.name,
              exchange: edge.partitionType.name.toLowerCase(),
            }));
          return {
            id: vertex.id.toString(),
            parallelism: vertex.parallelism,
            description: vertex.name,
            ...(inputs.length === 0 ? {} : { inputs }),
          };
        }),
      },
      "root-cause": rootCause,
      restarts: this.execution?.restarts ?? 0,
    };
  }
}

/** The final states of a subtask. */
const FINAL_EXECUTION_STATES: readonly ExecutionState[] = ["FINISHED", "CANCELED", "FAILED"];

/** A subtask's times from its attempt's state timestamps (Flink's `SubtaskExecutionAttemptDetailsInfo`). */
function subtaskTimes(
  stamps: Readonly<Partial<Record<ExecutionState, number>>>,
  now: number,
): TimesInfo {
  const start = stamps.DEPLOYING ?? -1;
  const end = Math.max(-1, ...FINAL_EXECUTION_STATES.map((state) => stamps[state] ?? -1));
  return timesOf(start, end, now);
}

/** A vertex's times from its subtasks' (Flink's `JobDetailsVertexInfo`). */
function vertexTimes(subtasks: readonly SubtaskInfo[], now: number): TimesInfo {
  const starts = subtasks.map((s) => s["start-time"]).filter((time) => time >= 0);
  const ended = subtasks.length > 0 && subtasks.every((s) => s["end-time"] >= 0);
  return timesOf(
    starts.length === 0 ? -1 : Math.min(...starts),
    ended ? Math.max(...subtasks.map((s) => s["end-time"])) : -1,
    now,
  );
}

function timesOf(start: number, end: number, now: number): TimesInfo {
  return {
    "start-time": start,
    "end-time": end,
    duration: start < 0 ? -1 : (end < 0 ? now : end) - start,
  };
}

/** Flink's aggregate state of a vertex from its subtasks' (`ExecutionJobVertex`). */
function aggregateState(counts: StatusCounts, parallelism: number): ExecutionState {
  for (const state of EXECUTION_STATES) if (counts[state] === parallelism) return state;
  for (const state of ["FAILED", "CANCELING", "CANCELED", "INITIALIZING", "RUNNING"] as const) {
    if (counts[state] > 0) return state;
  }
  return counts.FINISHED > 0 ? "RUNNING" : "CREATED";
}

/** The summed counters of subtasks; `missing` subtasks did not report (not complete). */
function ioMetricsOf(reported: readonly FetchedSubtask[], missing: number): IOMetricsInfo {
  const sum = (name: string) => reported.reduce((total, s) => total + metricValue(s, name), 0);
  const complete = missing === 0;
  return {
    "read-bytes": sum("numBytesIn"),
    "read-bytes-complete": complete,
    "write-bytes": sum("numBytesOut"),
    "write-bytes-complete": complete,
    "read-records": sum(MetricNames.IO_NUM_RECORDS_IN),
    "read-records-complete": complete,
    "write-records": sum(MetricNames.IO_NUM_RECORDS_OUT),
    "write-records-complete": complete,
    "accumulated-backpressured-time": sum(MetricNames.ACC_TASK_BACK_PRESSURED_TIME),
    "accumulated-idle-time": sum(MetricNames.ACC_TASK_IDLE_TIME),
    "accumulated-busy-time": sum(MetricNames.ACC_TASK_BUSY_TIME),
  };
}

function ratesInfoOf(rates: SubtaskRates): RatesInfo {
  return {
    "read-records-per-second": rates.recordsInPerSecond,
    "write-records-per-second": rates.recordsOutPerSecond,
    "read-bytes-per-second": rates.bytesInPerSecond,
    "write-bytes-per-second": rates.bytesOutPerSecond,
    "busy-time-ms-per-second": rates.busyTimeMsPerSecond,
    "idle-time-ms-per-second": rates.idleTimeMsPerSecond,
    "backpressured-time-ms-per-second": rates.backPressuredTimeMsPerSecond,
  };
}

function levelName(level: BackPressureLevel): BackPressureLevelName {
  return level.toLowerCase() as BackPressureLevelName;
}

function stackOf(error: Error): string {
  return error.stack ?? `${error.name}: ${error.message}`;
}

/** Whether `state` is one a job ends in. */
export function isFinalJobState(state: RestJobStatus): boolean {
  return FINAL_JOB_STATES.has(state);
}
