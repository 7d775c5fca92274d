/**
 * The end of a run: the summary of the finished job, built from what the job manager's REST API
 * says of it (the tasks' results, the final details, the task managers) and what the demo saw
 * (the processes, a kill, the committed part files), its counts verified against the corpus.
 */
import type { JobDetailsInfo, JobExecutionResultInfo } from "@sluice/cluster";
import { referenceCounts } from "@sluice/corpus";
import type { CheckpointingMode } from "@sluice/runtime";
import { type BatchSummary, batchTotals } from "./batch-mode.js";
import { formatInteger } from "./format.js";
import type { CommittedOutput } from "./sink-options.js";
import type { JobReport, KilledTaskManagerReport, ProcessReport, SinkReport } from "./summary.js";
import { type TaskProgress, TaskProgressSchema } from "./task-progress.js";
import { verifyAtLeastOnce, verifyCounts } from "./verification.js";
import { COUNT_VERTEX, type CountResult, corpusOf } from "./word-count-job.js";
import type { WordCountOptions } from "./word-count-options.js";

/** A task manager as `GET /taskmanagers` lists it (the fields the report reads). */
export interface ListedTaskManager {
  readonly id: string;
  readonly index: number;
  readonly pid: number;
  readonly connected: boolean;
}

/** What the report of a finished job is built from. */
export interface FinishedJob {
  readonly options: WordCountOptions;
  /** The plugin, as `<module>#<export>`, and the module file it was loaded from, if known. */
  readonly shuffle: string;
  readonly shuffleModule: string | undefined;
  readonly result: JobExecutionResultInfo;
  readonly details: JobDetailsInfo;
  readonly taskManagers: readonly ListedTaskManager[];
  readonly processes: readonly ProcessReport[];
  /** `execution.checkpointing.mode` when the job took checkpoints. */
  readonly checkpointing: CheckpointingMode | undefined;
  readonly durationMs: number;
  readonly killedTaskManager?: KilledTaskManagerReport | undefined;
  readonly batch?: BatchSummary | undefined;
  /** With `--sink files`: the committed part files (the counts are theirs then). */
  readonly committed?: { readonly output: CommittedOutput; readonly sink: SinkReport } | undefined;
  /** What is already known to be wrong (a batch report that disagrees, ...). */
  readonly differences?: readonly string[];
}

/** The summary of a finished job: its counts verified against the corpus it counted. */
export function buildJobReport(finished: FinishedJob): JobReport {
  const { options, result, details, checkpointing } = finished;
  const differences = [...(finished.differences ?? [])];
  const indexOf = new Map(finished.taskManagers.map((tm) => [tm.id, tm.index]));
  const tasks: (TaskProgress & { taskManager: number })[] = [];
  const counts: Map<string, number>[] = [];
  for (const vertex of details.vertices) {
    const results = result["accumulator-results"][vertex.name] ?? [];
    for (const subtask of vertex.subtasks) {
      const name = `${vertex.name} (${subtask.subtask + 1}/${vertex.parallelism})#${subtask.attempt}`;
      const returned = results[subtask.subtask] as Partial<CountResult> | null | undefined;
      const progress = TaskProgressSchema.safeParse(returned?.progress);
      if (!progress.success) {
        differences.push(`${name} returned no final counters`);
        continue;
      }
      tasks.push({
        ...progress.data,
        taskManager: indexOf.get(subtask["taskmanager-id"] ?? "") ?? -1,
      });
      if (vertex.name === COUNT_VERTEX) counts[subtask.subtask] = new Map(returned?.counts ?? []);
    }
  }
  const verifiedCounts =
    finished.committed?.output.countsBySubtask ??
    Array.from({ length: options.parallelism }, (_, i) => counts[i] ?? new Map<string, number>());
  if (finished.committed !== undefined) differences.push(...finished.committed.output.differences);
  const corpus = corpusOf(options);
  const reference = referenceCounts(corpus);
  const maxParallelism =
    details.vertices.find((vertex) => vertex.name === COUNT_VERTEX)?.maxParallelism ?? 128;
  const atLeastOnce = checkpointing === "AT_LEAST_ONCE";
  const verification = atLeastOnce
    ? verifyAtLeastOnce(reference, verifiedCounts, maxParallelism)
    : { ...verifyCounts(reference, verifiedCounts, maxParallelism), duplicates: 0 };
  const { duplicates } = verification;
  const records = tasks.filter((t) => t.kind === "count").reduce((sum, t) => sum + t.records, 0);
  const emitted = tasks.filter((t) => t.kind === "source").reduce((sum, t) => sum + t.records, 0);
  differences.push(...verification.differences);
  if (emitted !== corpus.records || records !== corpus.records + duplicates) {
    differences.unshift(
      `the sources emitted ${formatInteger(emitted)} and the counters received ${formatInteger(records)} words; the corpus has ${formatInteger(corpus.records)}`,
    );
  }
  for (const error of result["release-errors"]) {
    differences.push(`releasing the job's partitions failed: ${error}`);
  }
  const { batch } = finished;
  const checkpoints = result.checkpoints;
  const restoredFrom = checkpoints["restored-from"];
  const alignmentNanos = checkpoints["latest-alignment-duration-nanos"];
  return {
    shuffle: finished.shuffle,
    ...(finished.shuffleModule === undefined ? {} : { shuffleModule: finished.shuffleModule }),
    verified: differences.length === 0,
    differences,
    records,
    // A blocking partition writes its last sort buffer after its task returned its counters.
    bytes:
      batch === undefined
        ? tasks.filter((t) => t.kind === "source").reduce((sum, t) => sum + t.bytes, 0)
        : batchTotals(batch).partitionBytes,
    durationMs: finished.durationMs,
    parallelism: options.parallelism,
    taskManagers: finished.taskManagers.length,
    distinctWords: verification.distinctWords,
    tasks,
    processes: finished.processes,
    restarts: result.restarts,
    rerunTasks: result["rerun-tasks"],
    ...(checkpointing === undefined
      ? {}
      : {
          checkpointing: {
            mode: checkpointing,
            completed: checkpoints.completed,
            aborted: checkpoints.aborted,
            ...(restoredFrom === null
              ? {}
              : {
                  restoredFrom,
                  restoredChannelStateBytes: checkpoints["restored-persisted-data-bytes"] ?? 0,
                }),
            ...(alignmentNanos === null ? {} : { lastAlignmentMs: alignmentNanos / 1e6 }),
            ...(atLeastOnce ? { duplicates } : {}),
          },
        }),
    ...(finished.killedTaskManager === undefined
      ? {}
      : { killedTaskManager: finished.killedTaskManager }),
    ...(batch === undefined ? {} : { batch }),
    ...(finished.committed === undefined ? {} : { sink: finished.committed.sink }),
  };
}
