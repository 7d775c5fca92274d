/**
 * The demo job's report: the tasks' counters as they come in (metrics while the job runs, the
 * final counters each task returns), the task managers' shutdown reports and losses, and from
 * them the summary of a finished job (its counts verified against the corpus) or the JSON line
 * of a failed one.
 */
import type { RegisteredTaskManager, ShutdownReport } from "@sluice/cluster";
import { referenceCounts } from "@sluice/corpus";
import type { JobExecution, JobResult } from "@sluice/runtime";
import { type BatchSummary, batchTotals } from "./batch-mode.js";
import { formatInteger } from "./format.js";
import type { Recovery } from "./recovery.js";
import type { JobReport, ProcessReport } from "./summary.js";
import { ShutdownExtrasSchema, type TaskProgress, TaskProgressSchema } from "./task-progress.js";
import { verifyAtLeastOnce, verifyCounts } from "./verification.js";
import { COUNT_VERTEX, type WordCountJob } from "./word-count-job.js";

/** A task's counters and the index of the task manager it runs on. */
export type PlacedTaskProgress = TaskProgress & { taskManager: number };

/** What the report of a finished job is built from, besides what the builder collected. */
export interface FinishedJob {
  /** The plugin, as `<module>#<export>`, and the module file the loader imported. */
  readonly shuffle: string;
  readonly shuffleModule: string;
  readonly job: WordCountJob;
  readonly result: JobResult;
  readonly taskManagers: readonly RegisteredTaskManager[];
  /** Each count task's counts, from its result. */
  readonly counts: readonly Map<string, number>[];
  /** What is already known to be wrong (missing counters, a batch report that disagrees). */
  readonly differences: readonly string[];
  readonly durationMs: number;
  readonly parallelism: number;
  readonly recovery: Recovery | undefined;
  readonly batch: BatchSummary | undefined;
}

/** Collects what the job's report needs while it runs, and builds the report at its end. */
export class JobReportBuilder {
  private readonly progress = new Map<string, PlacedTaskProgress>();
  /** What each task manager reported when it shut down on request. */
  readonly shutdownReports = new Map<RegisteredTaskManager, ShutdownReport>();
  /** Task managers lost while the job ran (their connection closed or their heartbeats stopped). */
  readonly lost = new Set<RegisteredTaskManager>();

  /**
   * Records a task's counters. Keyed by operator and subtask, so that a restarted attempt's
   * counters replace those of the attempt before it.
   */
  setProgress(task: TaskProgress, taskManager: number): void {
    this.progress.set(`${task.kind} ${task.subtaskIndex}`, { ...task, taskManager });
  }

  /** Every task's latest counters. */
  tasks(): PlacedTaskProgress[] {
    return [...this.progress.values()];
  }

  /** Words the counters received so far. */
  countedRecords(): number {
    return this.tasks()
      .filter((task) => task.kind === "count")
      .reduce((sum, task) => sum + task.records, 0);
  }

  /**
   * Takes the final counters every task returned with its result (and a count task its counts);
   * a task without them is added to `differences`. Returns the count tasks' counts.
   */
  takeFinalCounters(
    vertices: JobExecution["executionVertices"],
    differences: string[],
  ): Map<string, number>[] {
    const counts: Map<string, number>[] = [];
    for (const vertex of vertices) {
      const returned = vertex.result as { progress?: unknown; counts?: [string, number][] };
      const progress = TaskProgressSchema.safeParse(returned?.progress);
      if (!progress.success) {
        differences.push(`${vertex.name} returned no final counters`);
        continue;
      }
      this.setProgress(progress.data, (vertex.gateway as RegisteredTaskManager).index);
      if (vertex.vertex.name === COUNT_VERTEX) counts.push(new Map(returned.counts ?? []));
    }
    return counts;
  }

  /** A task manager's peak RSS from its shutdown report (0 without one). */
  peakRssMbOf(tm: RegisteredTaskManager): number {
    const extras = ShutdownExtrasSchema.safeParse(this.shutdownReports.get(tm)?.application);
    return extras.success ? extras.data.peakRssMb : 0;
  }

  /** The summary of a finished job: its counts verified against the corpus it counted. */
  build(finished: FinishedJob): JobReport {
    const { job, result, taskManagers, recovery, batch } = finished;
    const differences = [...finished.differences];
    const atLeastOnce = recovery?.settings.mode === "AT_LEAST_ONCE";
    const reference = referenceCounts(job.corpus);
    const verification = atLeastOnce
      ? verifyAtLeastOnce(reference, finished.counts, job.maxParallelism)
      : { ...verifyCounts(reference, finished.counts, job.maxParallelism), duplicates: 0 };
    const { duplicates } = verification;
    const tasks = this.tasks();
    const records = tasks.filter((t) => t.kind === "count").reduce((sum, t) => sum + t.records, 0);
    const emitted = tasks.filter((t) => t.kind === "source").reduce((sum, t) => sum + t.records, 0);
    differences.push(...verification.differences);
    if (emitted !== job.corpus.records || records !== job.corpus.records + duplicates) {
      differences.unshift(
        `the sources emitted ${formatInteger(emitted)} and the counters received ${formatInteger(records)} words; the corpus has ${formatInteger(job.corpus.records)}`,
      );
    }
    for (const error of result.releaseErrors) {
      differences.push(`releasing the job's partitions failed: ${error.message}`);
    }
    const processes: ProcessReport[] = [
      { role: "jobmanager", pid: process.pid, peakRssMb: process.resourceUsage().maxRSS / 1024 },
      ...taskManagers.map((tm) => {
        const closed = this.shutdownReports.get(tm);
        const lost = this.lost.has(tm);
        if (closed === undefined && !lost) {
          differences.push(`${tm.label} did not report its shutdown`);
        }
        return {
          role: "taskmanager" as const,
          index: tm.index,
          pid: tm.pid,
          ...(lost ? { lost } : {}),
          peakRssMb: this.peakRssMbOf(tm),
          ...(closed?.networkBuffers == null ? {} : { bufferPool: closed.networkBuffers }),
          unreleasedPartitions: closed?.unreleasedPartitions ?? 0,
        };
      }),
    ];
    return {
      shuffle: finished.shuffle,
      shuffleModule: finished.shuffleModule,
      verified: differences.length === 0,
      differences,
      records,
      // A blocking partition writes its last sort buffer after its task returned its counters.
      bytes:
        batch === undefined
          ? tasks.filter((t) => t.kind === "source").reduce((sum, t) => sum + t.bytes, 0)
          : batchTotals(batch).partitionBytes,
      durationMs: finished.durationMs,
      parallelism: finished.parallelism,
      taskManagers: taskManagers.length,
      distinctWords: verification.distinctWords,
      tasks,
      processes,
      ...recoveryReport(result, recovery, duplicates),
      ...(batch === undefined ? {} : { batch }),
    };
  }

  /** The `--json` line of a failed run: the root cause and the processes' peak RSS. */
  failureJson(
    error: string,
    shuffle: string,
    taskManagers: readonly RegisteredTaskManager[],
  ): Record<string, unknown> {
    return {
      verified: false,
      error,
      shuffle,
      processes: [
        {
          role: "jobmanager",
          pid: process.pid,
          peakRssMb: round1(process.resourceUsage().maxRSS / 1024),
        },
        ...taskManagers.map((tm) => ({
          role: "taskmanager",
          index: tm.index,
          pid: tm.pid,
          peakRssMb: round1(this.peakRssMbOf(tm)),
        })),
      ],
    };
  }
}

/** What the summary reports about checkpoints and the restart. */
function recoveryReport(
  result: JobResult,
  recovery: Recovery | undefined,
  duplicates: number,
): Pick<JobReport, "checkpointing" | "restarts" | "rerunTasks" | "killedTaskManager"> {
  const mode = recovery?.settings.mode;
  const killed = recovery?.killedTaskManager;
  const { completed, aborted, restoredFrom, restoredPersistedDataBytes, latest } =
    result.checkpoints;
  return {
    restarts: result.restarts,
    rerunTasks: result.rerunTasks,
    ...(mode === undefined
      ? {}
      : {
          checkpointing: {
            mode,
            completed,
            aborted,
            ...(restoredFrom === undefined
              ? {}
              : {
                  restoredFrom: Number(restoredFrom),
                  restoredChannelStateBytes: restoredPersistedDataBytes ?? 0,
                }),
            ...(latest === undefined
              ? {}
              : { lastAlignmentMs: latest.alignmentDurationNanos / 1e6 }),
            ...(mode === "AT_LEAST_ONCE" ? { duplicates } : {}),
          },
        }),
    ...(killed === undefined ? {} : { killedTaskManager: killed }),
  };
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
