import { setTimeout as delay } from "node:timers/promises";
import type { JobDetailsInfo, RestClusterClient, TaskManagerMetric } from "@sluice/cluster";
import type { Configuration } from "@sluice/runtime";
import {
  BatchShuffleOptions,
  NetworkMemoryOptions,
  RestartStrategyOptions,
} from "@sluice/runtime-api";
import * as z from "zod";
import { formatDuration, formatInteger, formatMegabytes } from "./format.js";

/**
 * `--mode batch`: the word count as a batch job. The sources write BLOCKING partitions (sort-merge
 * files on disk, compressed) and finish; the counters are deployed once every source finished, and
 * read the files their task managers keep serving; the job's end releases the partitions, which
 * deletes the files. The task managers report what was written and deleted through the network
 * shuffle's `Status.Shuffle.Netty.BatchShuffle.*` metrics.
 */

/** One vertex's time span in the job, in ms since the job's first deployment. */
export interface StageSpan {
  readonly vertex: string;
  /** When the first of its tasks was deployed. */
  readonly deployedMs: number;
  /** When the last of them finished (the job's end when some never did). */
  readonly finishedMs: number;
}

/**
 * What batch mode sets unless the configuration sets it: small worker memory, so that the default
 * run's partition data is several times the network memory of a task manager (the producer's
 * memory stays bounded while its data goes to disk), and compression on.
 */
export const BATCH_CONFIG_DEFAULTS = [
  [NetworkMemoryOptions.NETWORK_MEMORY_MIN, "8mb"],
  [BatchShuffleOptions.SORT_SHUFFLE_MIN_BUFFERS, 128],
  [BatchShuffleOptions.BATCH_SHUFFLE_READ_MEMORY, "16mb"],
  [BatchShuffleOptions.BATCH_SHUFFLE_COMPRESSION_ENABLED, true],
] as const;

/** Sets {@link BATCH_CONFIG_DEFAULTS} for each key the configuration (file, `-D`) leaves unset. */
export function applyBatchDefaults(configuration: Configuration): void {
  for (const [option, value] of BATCH_CONFIG_DEFAULTS) {
    if (!configuration.contains(option)) configuration.set(option.key, value);
  }
}

/**
 * The restart strategy batch mode sets for `--kill-task-manager-*` when the configuration sets
 * none: a batch job takes no checkpoints, and without them Flink's default is `none`, under which
 * the kill would fail the job. Flink's `fixed-delay`, with room for the failovers a kill causes.
 */
export const BATCH_KILL_RESTART_STRATEGY = [
  [RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay"],
  [RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 3],
  [RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, "200ms"],
] as const;

/**
 * Sets {@link BATCH_KILL_RESTART_STRATEGY} unless `restart-strategy.type` is set; returns the line
 * that tells the user, or `undefined` when their strategy stands.
 */
export function applyBatchRestartStrategy(configuration: Configuration): string | undefined {
  if (configuration.contains(RestartStrategyOptions.RESTART_STRATEGY)) return undefined;
  for (const [option, value] of BATCH_KILL_RESTART_STRATEGY) configuration.set(option.key, value);
  return (
    "no restart-strategy.type is configured, and a batch job without checkpoints would not " +
    "restart: the demo sets restart-strategy.type=fixed-delay (3 attempts, 200 ms apart) for the kill"
  );
}

/** The codec blocking partitions compress with, or `NONE` when compression is off. */
export function compressionCodecOf(configuration: Configuration): string {
  return configuration.get(BatchShuffleOptions.BATCH_SHUFFLE_COMPRESSION_ENABLED)
    ? String(configuration.get(BatchShuffleOptions.COMPRESSION_CODEC))
    : "NONE";
}

/** What a task manager's blocking partitions wrote and deleted, from its metrics. */
export const BatchShuffleReportSchema = z.object({
  /** `Status.Shuffle.Netty.TotalMemory`: the task manager's network memory. */
  networkMemoryBytes: z.number().min(0),
  fileBytesWritten: z.number().min(0),
  bytesBeforeCompression: z.number().min(0),
  bytesAfterCompression: z.number().min(0),
  filesCreated: z.number().min(0),
  filesDeleted: z.number().min(0),
  filesOnDisk: z.number().min(0),
});

/** One task manager's batch-shuffle report. */
export type BatchShuffleReport = z.output<typeof BatchShuffleReportSchema>;

/** The task manager metric each field of a report is read from. */
const REPORT_METRICS: Readonly<Record<keyof BatchShuffleReport, string>> = {
  networkMemoryBytes: "Status.Shuffle.Netty.TotalMemory",
  fileBytesWritten: "Status.Shuffle.Netty.BatchShuffle.FileBytesWritten",
  bytesBeforeCompression: "Status.Shuffle.Netty.BatchShuffle.BytesBeforeCompression",
  bytesAfterCompression: "Status.Shuffle.Netty.BatchShuffle.BytesAfterCompression",
  filesCreated: "Status.Shuffle.Netty.BatchShuffle.FilesCreated",
  filesDeleted: "Status.Shuffle.Netty.BatchShuffle.FilesDeleted",
  filesOnDisk: "Status.Shuffle.Netty.BatchShuffle.FilesOnDisk",
};

/** How long the demo waits for a task manager's released partitions' files to be deleted. */
const DELETION_WAIT_MS = 10_000;

/**
 * Reads the report from a task manager's metrics (`GET /taskmanagers/:id/metrics`), or
 * `undefined` when its shuffle plugin does not register them.
 */
export function readBatchShuffleReport(
  metrics: readonly TaskManagerMetric[],
): BatchShuffleReport | undefined {
  const values = new Map(metrics.map((metric) => [metric.id, Number(metric.value)]));
  const report: Record<string, number> = {};
  for (const [field, metric] of Object.entries(REPORT_METRICS)) {
    const value = values.get(metric);
    if (value === undefined || Number.isNaN(value)) return undefined;
    report[field] = value;
  }
  return report as unknown as BatchShuffleReport;
}

/**
 * Each task manager's batch-shuffle report, once the job ended: its partitions were released and
 * their files are deleted asynchronously, so each is asked again (bounded) until none is left.
 * `null` for one whose plugin has no batch-shuffle metrics.
 */
export async function batchShuffleReports(
  client: RestClusterClient,
  taskManagerIds: readonly string[],
): Promise<(BatchShuffleReport | null)[]> {
  const query = `metrics?get=${Object.values(REPORT_METRICS).join(",")}`;
  const deadline = Date.now() + DELETION_WAIT_MS;
  return Promise.all(
    taskManagerIds.map(async (id) => {
      for (;;) {
        const report = readBatchShuffleReport(
          await client.get<TaskManagerMetric[]>(`/taskmanagers/${id}/${query}`),
        );
        if (report === undefined) return null;
        if (report.filesOnDisk === 0 || Date.now() >= deadline) return report;
        await delay(20);
      }
    }),
  );
}

/**
 * When each vertex ran, from the job's final details (Flink's vertex `start-time` and `end-time`),
 * in ms since its first vertex was deployed, in the order the vertices were deployed.
 */
export function stagesOf(job: JobDetailsInfo): StageSpan[] {
  const started = job.vertices.filter((vertex) => vertex["start-time"] >= 0);
  const first = Math.min(...started.map((vertex) => vertex["start-time"]));
  const end = job["end-time"] >= 0 ? job["end-time"] : job.now;
  return started
    .map((vertex) => ({
      vertex: vertex.name,
      deployedMs: vertex["start-time"] - first,
      finishedMs: (vertex["end-time"] >= 0 ? vertex["end-time"] : end) - first,
    }))
    .sort((a, b) => a.deployedMs - b.deployedMs);
}

/** The batch part of the job's report: every task manager's report, summed up, and the stages. */
export interface BatchSummary {
  /** `taskmanager.network.compression.codec`, or `NONE`. */
  readonly codec: string;
  /** Per task manager (by index). */
  readonly taskManagers: readonly BatchShuffleReport[];
  /**
   * Per shuffle worker, when the partitions live on shuffle workers (`--shuffle remote`): then
   * the files are theirs, and the task managers hold none.
   */
  readonly shuffleWorkers?: readonly BatchShuffleReport[];
  /** When each vertex's first task was deployed and its last one finished. */
  readonly stages: readonly StageSpan[];
}

/** Totals over the task managers. */
export function batchTotals(summary: BatchSummary) {
  const stores = summary.shuffleWorkers ?? summary.taskManagers;
  const sum = (pick: (r: BatchShuffleReport) => number) =>
    stores.reduce((total, r) => total + pick(r), 0);
  const networkMemory = Math.max(0, ...summary.taskManagers.map((r) => r.networkMemoryBytes));
  const before = sum((r) => r.bytesBeforeCompression);
  const after = sum((r) => r.bytesAfterCompression);
  // The smallest multiple over the task managers: each producer's data against its own memory;
  // with shuffle workers, the data of an average task manager's producers.
  const multiples =
    summary.shuffleWorkers === undefined
      ? summary.taskManagers
          .filter((r) => r.networkMemoryBytes > 0)
          .map((r) => r.bytesBeforeCompression / r.networkMemoryBytes)
      : networkMemory > 0 && summary.taskManagers.length > 0
        ? [before / summary.taskManagers.length / networkMemory]
        : [];
  return {
    partitionBytes: before,
    fileBytes: sum((r) => r.fileBytesWritten),
    compressionRatio: after === 0 ? 1 : before / after,
    filesCreated: sum((r) => r.filesCreated),
    filesDeleted: sum((r) => r.filesDeleted),
    filesOnDisk: sum((r) => r.filesOnDisk),
    networkMemory,
    memoryMultiple: multiples.length === 0 ? 0 : Math.min(...multiples),
  };
}

/** What is wrong with a batch run: files left behind, counters deployed too early. */
export function batchDifferences(summary: BatchSummary, countVertex: string): string[] {
  const differences: string[] = [];
  const t = batchTotals(summary);
  if (t.filesOnDisk > 0 || t.filesDeleted !== t.filesCreated) {
    differences.push(
      `${t.filesCreated - t.filesDeleted} of ${t.filesCreated} blocking partition files were not deleted when the job ended`,
    );
  }
  const counters = summary.stages.find((s) => s.vertex === countVertex);
  for (const stage of summary.stages) {
    if (counters === undefined || stage === counters) continue;
    if (counters.deployedMs < stage.finishedMs) {
      differences.push(
        `the counters were deployed at ${formatDuration(counters.deployedMs)}, before "${stage.vertex}" finished at ${formatDuration(stage.finishedMs)}`,
      );
    }
  }
  return differences;
}

function formatMebibytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** The summary lines of a batch run. */
export function formatBatchSummary(summary: BatchSummary): string[] {
  const t = batchTotals(summary);
  const stages = summary.stages
    .map((s) => `${s.vertex} ${formatDuration(s.deployedMs)} – ${formatDuration(s.finishedMs)}`)
    .join(", then ");
  return [
    `  stages         ${stages}`,
    `  partitions     ${formatMegabytes(t.partitionBytes)} of BLOCKING partition data, ${t.memoryMultiple.toFixed(1)}x the network memory of a task manager (${formatMebibytes(t.networkMemory)})`,
    `  on disk        ${formatMegabytes(t.fileBytes)} in ${formatInteger(t.filesCreated)} files (data + index)${summary.shuffleWorkers === undefined ? "" : ` on ${summary.shuffleWorkers.length} shuffle workers`}, compression ratio ${t.compressionRatio.toFixed(2)} (${summary.codec})`,
    `  released       ${formatInteger(t.filesDeleted)} files deleted at the job's end`,
  ];
}

/** The `batch` object of the `--json` summary. */
export function batchJson(summary: BatchSummary): Record<string, unknown> {
  const t = batchTotals(summary);
  return {
    codec: summary.codec,
    partitionBytes: t.partitionBytes,
    bytesOnDisk: t.fileBytes,
    compressionRatio: Math.round(t.compressionRatio * 100) / 100,
    networkMemoryBytes: t.networkMemory,
    networkMemoryMultiple: Math.round(t.memoryMultiple * 10) / 10,
    filesCreated: t.filesCreated,
    filesDeleted: t.filesDeleted,
    stages: summary.stages.map((s) => ({
      vertex: s.vertex,
      deployedMs: Math.round(s.deployedMs),
      finishedMs: Math.round(s.finishedMs),
    })),
  };
}
