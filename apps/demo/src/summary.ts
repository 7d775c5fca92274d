import type { CheckpointingMode } from "@sluice/runtime";
import { type BatchSummary, batchJson, formatBatchSummary } from "./batch-mode.js";
import {
  formatDuration,
  formatInteger,
  formatMegabytes,
  formatTable,
  perSecond,
} from "./format.js";
import type { TaskProgress } from "./task-progress.js";

/** The task manager `--kill-task-manager-after` killed, as the summary reports it. */
export interface KilledTaskManagerReport {
  /** Its registration index (`task manager 1`). */
  readonly index: number;
  readonly pid: number;
  /** How long into the job it was killed. */
  readonly afterMs: number;
  /**
   * The job's newest completed checkpoint when the job manager noticed the loss: what the restart
   * restores (no checkpoint completes once a task manager is gone, and a restart aborts the
   * pending ones).
   */
  readonly latestCheckpoint?: number;
  /** The tasks that had run on it by the kill, as `Name (i/n)`. */
  readonly tasks: readonly string[];
}

/** One process of the job, as the summary reports it. */
export interface ProcessReport {
  readonly role: "jobmanager" | "taskmanager";
  /** The task manager's index (absent for the job manager). */
  readonly index?: number;
  readonly pid: number;
  /**
   * Peak resident set size (`maxRSS`), in MiB; absent where the demo cannot know it (the task
   * managers of a session cluster keep running).
   */
  readonly peakRssMb?: number;
  /** NetworkBufferPool segments free when the environment closed / all segments. */
  readonly bufferPool?: { readonly available: number; readonly total: number };
  /** Partitions still holding memory at shutdown. */
  readonly unreleasedPartitions?: number;
  /** True for a task manager that was lost during the job (killed, crashed). */
  readonly lost?: boolean;
}

/** What a job that took checkpoints reports about them. */
export interface CheckpointingReport {
  /** `execution.checkpointing.mode`. */
  readonly mode: CheckpointingMode;
  /** Checkpoints every task acknowledged. */
  readonly completed: number;
  /** Checkpoints triggered and aborted. */
  readonly aborted: number;
  /** The checkpoint the restart restored; absent without one. */
  readonly restoredFrom?: number;
  /** Bytes of in-flight data (channel state) the restored checkpoint held; with `restoredFrom`. */
  readonly restoredChannelStateBytes?: number;
  /** The longest alignment of any task in the newest completed checkpoint, in ms. */
  readonly lastAlignmentMs?: number;
  /** At-least-once: words counted more often than the corpus holds them (replayed). */
  readonly duplicates?: number;
}

/** Everything the end of a successful run reports. */
export interface JobReport {
  /** The plugin, as `<module>#<export>`. */
  readonly shuffle: string;
  /** The module file the loader imported (unknown for a session cluster's plugin). */
  readonly shuffleModule?: string;
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
  /** The job's checkpoints; absent when it took none. */
  readonly checkpointing?: CheckpointingReport;
  /** How often the job restarted. */
  readonly restarts: number;
  /**
   * The tasks that re-ran after a failover, as `Name (i/n)`: after a region failover (batch)
   * only the regions that had to, after a global one every task that had been deployed.
   */
  readonly rerunTasks: readonly string[];
  /** The task manager `--kill-task-manager-after` killed. */
  readonly killedTaskManager?: KilledTaskManagerReport;
  /** Batch mode: the stages and what the blocking partitions put on disk. */
  readonly batch?: BatchSummary;
  /** `--sink files`: the committed part files the counts were verified from. */
  readonly sink?: SinkReport;
}

/** What the exactly-once file sink (`--sink files`) committed. */
export interface SinkReport {
  /** The `--output` folder. */
  readonly directory: string;
  /** Committed part files in it. */
  readonly committedFiles: number;
  /** Their bytes. */
  readonly committedBytes: number;
  /** Transactions the final attempts' sinks aborted (the open ones of a restored checkpoint, lingering ones). */
  readonly abortedTransactions: number;
}

/** True when every task manager returned all its network buffers and released its partitions. */
export function buffersReturned(report: JobReport): boolean {
  return report.processes.every(
    (p) =>
      p.role === "jobmanager" ||
      p.lost === true ||
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
    ...(report.shuffleModule === undefined ? [] : [`  plugin module  ${report.shuffleModule}`]),
    `  records        ${formatInteger(report.records)} words through the keyed exchange (${formatInteger(report.distinctWords)} distinct)`,
    `  bytes          ${formatMegabytes(report.bytes)} out of the source partitions`,
    `  duration       ${formatDuration(report.durationMs)} (${report.parallelism} sources, ${report.parallelism} counters, ${report.taskManagers} task managers)`,
    `  throughput     ${formatInteger(rate)} records/s, ${formatMegabytes(perSecond(report.bytes, report.durationMs))}/s`,
    ...recoveryLines(report),
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
        p.peakRssMb === undefined ? "-" : `${p.peakRssMb.toFixed(1)} MiB`,
        p.lost === true
          ? "lost during the job"
          : p.bufferPool === undefined
            ? "-"
            : `${formatInteger(p.bufferPool.available)}/${formatInteger(p.bufferPool.total)} free${
                p.bufferPool.available === p.bufferPool.total ? "" : " (LEAK)"
              }${(p.unreleasedPartitions ?? 0) > 0 ? `, ${p.unreleasedPartitions} partitions not released` : ""}`,
      ]),
    ]),
    "",
  );
  const duplicates = report.checkpointing?.duplicates;
  if (report.verified && duplicates !== undefined) {
    lines.push(
      `verified: no word lost (at-least-once); ${formatInteger(duplicates)} words were counted twice`,
    );
  } else if (report.verified) {
    lines.push(
      report.sink === undefined
        ? `verified: the counts of all ${formatInteger(report.records)} words equal the reference`
        : `verified: the committed part files hold the counts of all ${formatInteger(report.records)} words exactly once`,
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
      ...(p.peakRssMb === undefined ? {} : { peakRssMb: Math.round(p.peakRssMb * 10) / 10 }),
      ...(p.lost === true ? { lost: true } : {}),
    })),
    ...(report.checkpointing === undefined
      ? {}
      : {
          checkpoints: {
            completed: report.checkpointing.completed,
            aborted: report.checkpointing.aborted,
            restoredFrom: report.checkpointing.restoredFrom ?? null,
            ...(report.checkpointing.restoredChannelStateBytes === undefined
              ? {}
              : { restoredChannelStateBytes: report.checkpointing.restoredChannelStateBytes }),
          },
          checkpointingMode: report.checkpointing.mode,
          lastCheckpointAlignmentMs:
            report.checkpointing.lastAlignmentMs === undefined
              ? null
              : Math.round(report.checkpointing.lastAlignmentMs * 1000) / 1000,
          ...(report.checkpointing.duplicates === undefined
            ? {}
            : { duplicates: report.checkpointing.duplicates }),
        }),
    restarts: report.restarts,
    rerunTasks: report.rerunTasks,
    ...(report.killedTaskManager === undefined
      ? {}
      : {
          killedTaskManager: {
            ...report.killedTaskManager,
            afterMs: Math.round(report.killedTaskManager.afterMs),
          },
        }),
    ...(report.batch === undefined ? {} : { batch: batchJson(report.batch) }),
    ...(report.sink === undefined
      ? {}
      : {
          sink: {
            committedFiles: report.sink.committedFiles,
            committedBytes: report.sink.committedBytes,
            abortedTransactions: report.sink.abortedTransactions,
          },
        }),
    ...(report.verified ? {} : { differences: report.differences }),
  };
}

/** The checkpoint and restart lines of the summary (none for a job without checkpoints). */
function recoveryLines(report: JobReport): string[] {
  const lines: string[] = [];
  const checkpoints = report.checkpointing;
  if (checkpoints !== undefined) {
    const alignment =
      checkpoints.lastAlignmentMs === undefined
        ? ""
        : `; last alignment ${checkpoints.lastAlignmentMs.toFixed(1)} ms`;
    lines.push(
      `  checkpoints    ${checkpoints.completed} completed, ${checkpoints.aborted} aborted (${checkpoints.mode === "EXACTLY_ONCE" ? "exactly-once" : "at-least-once"})${alignment}`,
    );
    if (
      checkpoints.restoredChannelStateBytes !== undefined &&
      checkpoints.restoredChannelStateBytes > 0
    ) {
      lines.push(
        `  channel state  checkpoint ${checkpoints.restoredFrom} held ${checkpoints.restoredChannelStateBytes.toLocaleString("en-US")} bytes of in-flight data, replayed at the restart`,
      );
    }
  }
  const killed = report.killedTaskManager;
  if (killed !== undefined || report.restarts > 0) {
    const kill =
      killed === undefined
        ? ""
        : `task manager ${killed.index} (pid ${killed.pid}) killed ${formatDuration(killed.afterMs)} into the job; `;
    const from =
      checkpoints?.restoredFrom === undefined ? "" : ` from checkpoint ${checkpoints.restoredFrom}`;
    lines.push(
      `  recovery       ${kill}${report.restarts} restart${report.restarts === 1 ? "" : "s"}${from}`,
    );
    if (report.rerunTasks.length > 0) {
      lines.push(`  re-ran         ${report.rerunTasks.join(", ")}`);
    }
  }
  const sink = report.sink;
  if (sink !== undefined) {
    lines.push(
      `  file sink      ${sink.committedFiles.toLocaleString("en-US")} committed part files, ${sink.committedBytes.toLocaleString("en-US")} bytes in ${sink.directory}; ${sink.abortedTransactions} transaction(s) aborted`,
    );
  }
  return lines;
}
