import { type BatchSummary, batchJson, formatBatchSummary } from "./batch-mode.js";
import {
  formatDuration,
  formatInteger,
  formatMegabytes,
  formatTable,
  perSecond,
} from "./format.js";
import type { TaskProgress } from "./task-progress.js";

/** One process of the job, as the summary reports it. */
export interface ProcessReport {
  readonly role: "jobmanager" | "taskmanager";
  /** The task manager's index (absent for the job manager). */
  readonly index?: number;
  readonly pid: number;
  /** Peak resident set size (`process.resourceUsage().maxRSS`), in MiB. */
  readonly peakRssMb: number;
  /** NetworkBufferPool segments free when the environment closed / all segments. */
  readonly bufferPool?: { readonly available: number; readonly total: number };
  /** Partitions still holding memory at shutdown. */
  readonly unreleasedPartitions?: number;
}

/** Everything the end of a successful run reports. */
export interface JobReport {
  /** The plugin, as `<module>#<export>`. */
  readonly shuffle: string;
  /** The module file the loader imported. */
  readonly shuffleModule: string;
  readonly verified: boolean;
  readonly differences: readonly string[];
  /** Words that crossed the keyed exchange (received by the counters). */
  readonly records: number;
  /** Bytes out of the source partitions (buffers handed to the subpartitions). */
  readonly bytes: number;
  readonly durationMs: number;
  readonly parallelism: number;
  readonly taskManagers: number;
  readonly distinctWords: number;
  /** Final counters of every task, with the task manager it ran on. */
  readonly tasks: readonly (TaskProgress & { readonly taskManager: number })[];
  readonly processes: readonly ProcessReport[];
  /** Batch mode: the stages and what the blocking partitions put on disk. */
  readonly batch?: BatchSummary;
}

/** True when every task manager returned all its network buffers and released its partitions. */
export function buffersReturned(report: JobReport): boolean {
  return report.processes.every(
    (p) =>
      p.role === "jobmanager" ||
      ((p.bufferPool === undefined || p.bufferPool.available === p.bufferPool.total) &&
        (p.unreleasedPartitions ?? 0) === 0),
  );
}

/** The human-readable summary: totals, a task table and a process table. */
export function formatSummary(report: JobReport): string {
  const rate = perSecond(report.records, report.durationMs);
  const lines = [
    "",
    `Word count over ${report.shuffle}`,
    `  plugin module  ${report.shuffleModule}`,
    `  records        ${formatInteger(report.records)} words through the keyed exchange (${formatInteger(report.distinctWords)} distinct)`,
    `  bytes          ${formatMegabytes(report.bytes)} out of the source partitions`,
    `  duration       ${formatDuration(report.durationMs)} (${report.parallelism} sources, ${report.parallelism} counters, ${report.taskManagers} task managers)`,
    `  throughput     ${formatInteger(rate)} records/s, ${formatMegabytes(perSecond(report.bytes, report.durationMs))}/s`,
    ...(report.batch === undefined ? [] : formatBatchSummary(report.batch)),
    "",
  ];
  const tasks = [...report.tasks].sort((a, b) =>
    a.kind === b.kind ? a.subtaskIndex - b.subtaskIndex : a.kind === "source" ? -1 : 1,
  );
  lines.push(
    formatTable([
      ["task", "task manager", "records", "bytes", "back-pressured"],
      ...tasks.map((t) => [
        t.name,
        String(t.taskManager),
        formatInteger(t.records),
        formatMegabytes(t.bytes),
        t.kind === "source" ? formatDuration(t.backPressuredTimeMs) : "-",
      ]),
    ]),
    "",
    formatTable([
      ["process", "pid", "peak RSS", "network buffers at close"],
      ...report.processes.map((p) => [
        p.role === "jobmanager" ? "job manager" : `task manager ${p.index}`,
        String(p.pid),
        `${p.peakRssMb.toFixed(1)} MiB`,
        p.bufferPool === undefined
          ? "-"
          : `${formatInteger(p.bufferPool.available)}/${formatInteger(p.bufferPool.total)} free${
              p.bufferPool.available === p.bufferPool.total ? "" : " (LEAK)"
            }${(p.unreleasedPartitions ?? 0) > 0 ? `, ${p.unreleasedPartitions} partitions not released` : ""}`,
      ]),
    ]),
    "",
  );
  if (report.verified) {
    lines.push(
      `verified: the counts of all ${formatInteger(report.records)} words equal the reference`,
    );
  } else {
    lines.push(
      "NOT verified: the counts differ from the reference:",
      ...report.differences.map((d) => `  ${d}`),
    );
  }
  return `${lines.join("\n")}\n`;
}

/** The `--json` object (one line, the last of stdout). */
export function summaryJson(report: JobReport): Record<string, unknown> {
  return {
    verified: report.verified,
    records: report.records,
    bytes: report.bytes,
    durationMs: Math.round(report.durationMs),
    recordsPerSecond: Math.round(perSecond(report.records, report.durationMs)),
    shuffle: report.shuffle,
    parallelism: report.parallelism,
    taskManagers: report.taskManagers,
    distinctWords: report.distinctWords,
    buffersReturned: buffersReturned(report),
    processes: report.processes.map((p) => ({
      role: p.role,
      ...(p.index === undefined ? {} : { index: p.index }),
      pid: p.pid,
      peakRssMb: Math.round(p.peakRssMb * 10) / 10,
    })),
    ...(report.batch === undefined ? {} : { batch: batchJson(report.batch) }),
    ...(report.verified ? {} : { differences: report.differences }),
  };
}
