import type { JobDetailsInfo } from "@sluice/cluster";
import cliProgress from "cli-progress";
import { formatInteger, formatMegabytes, formatPercent, perSecond } from "./format.js";
import type { TaskProgress } from "./task-progress.js";
import { SOURCE_VERTEX } from "./word-count-job.js";

/** What the job manager knows about the running job at one moment. */
export interface ProgressSnapshot {
  readonly elapsedMs: number;
  /** Words the job will move in total. */
  readonly totalRecords: number;
  /** The latest counters of every task that reported. */
  readonly tasks: readonly TaskProgress[];
  /** What the job waits for, when it cannot run (`waiting 12 s of 5 min ... for ...`). */
  readonly waiting?: readonly string[];
}

/**
 * The live counters of every subtask that reported metrics, in the REST endpoint's job details
 * (the metrics the job manager fetched last): records out of a source and into a counter, bytes
 * out of the source's partition and into the counter's gate, the output or input pool usage and
 * the back-pressured time.
 */
export function taskProgressOfDetails(job: JobDetailsInfo): TaskProgress[] {
  return job.vertices.flatMap((vertex) => {
    const source = vertex.name === SOURCE_VERTEX;
    const reported = vertex.subtasks.filter((subtask) => subtask.metrics["write-records-complete"]);
    return reported.map((subtask) => ({
      name: `${vertex.name} (${subtask.subtask + 1}/${vertex.parallelism})#${subtask.attempt}`,
      kind: source ? ("source" as const) : ("count" as const),
      subtaskIndex: subtask.subtask,
      records: source ? subtask.metrics["write-records"] : subtask.metrics["read-records"],
      bytes: source ? subtask.metrics["write-bytes"] : subtask.metrics["read-bytes"],
      poolUsage: Math.min(
        1,
        Math.max(0, (source ? subtask["out-pool-usage"] : subtask["in-pool-usage"]) ?? 0),
      ),
      backPressuredTimeMs: subtask.metrics["accumulated-backpressured-time"],
      finished: subtask.status === "FINISHED",
    }));
  });
}

/** ` | waiting …` after the progress, or nothing. */
function waitingSuffix(snapshot: ProgressSnapshot): string {
  const waiting = snapshot.waiting ?? [];
  return waiting.length === 0 ? "" : ` | ${waiting.join("; ")}`;
}

/** Renders progress while the job runs. */
export interface ProgressView {
  /** Renders `snapshot`; a plain-line view prints at most once a second unless `final`. */
  update(snapshot: ProgressSnapshot, final?: boolean): void;
  stop(): void;
}

/** Totals and rates since the previous snapshot. */
interface Rates {
  readonly recordsIn: number;
  readonly recordsPerSecond: number;
  readonly bytesPerSecond: number;
}

class RateMeter {
  private lastMs = 0;
  private lastRecords = 0;
  private lastBytes = 0;

  next(snapshot: ProgressSnapshot): Rates {
    let recordsIn = 0;
    let bytesOut = 0;
    for (const task of snapshot.tasks) {
      if (task.kind === "count") recordsIn += task.records;
      else bytesOut += task.bytes;
    }
    const ms = snapshot.elapsedMs - this.lastMs;
    const rates = {
      recordsIn,
      // A restarted attempt starts its counters from its checkpoint (records) or from zero
      // (bytes): totals may go back, and a rate is then the attempt's, not negative.
      recordsPerSecond: perSecond(Math.max(0, recordsIn - this.lastRecords), ms),
      bytesPerSecond: perSecond(Math.max(0, bytesOut - this.lastBytes), ms),
    };
    this.lastMs = snapshot.elapsedMs;
    this.lastRecords = recordsIn;
    this.lastBytes = bytesOut;
    return rates;
  }
}

/** `S1 80% S2 75%`: a short per-task label and value, sources or counters. */
function perTask(
  tasks: readonly TaskProgress[],
  kind: TaskProgress["kind"],
  value: (t: TaskProgress) => string,
): string {
  const prefix = kind === "source" ? "S" : "C";
  return tasks
    .filter((t) => t.kind === kind)
    .sort((a, b) => a.subtaskIndex - b.subtaskIndex)
    .map((t) => `${prefix}${t.subtaskIndex + 1} ${value(t)}`)
    .join(" ");
}

function pools(snapshot: ProgressSnapshot): { out: string; in: string; bp: string } {
  return {
    out: perTask(snapshot.tasks, "source", (t) => formatPercent(t.poolUsage)),
    in: perTask(snapshot.tasks, "count", (t) => formatPercent(t.poolUsage)),
    bp: perTask(snapshot.tasks, "source", (t) => `${(t.backPressuredTimeMs / 1000).toFixed(1)}s`),
  };
}

/** A cli-progress bar, for terminals. */
class BarView implements ProgressView {
  private readonly bar: cliProgress.SingleBar;
  private readonly meter = new RateMeter();
  private started = false;

  constructor(stream: NodeJS.WriteStream) {
    this.bar = new cliProgress.SingleBar(
      {
        stream,
        format:
          "{bar} {percentage}% | {words}/{totalWords} words | {rate} rec/s | {mbps} | out pool {outPool} | in pool {inPool} | back-pressured {bp}{waiting}",
        barsize: 24,
        hideCursor: true,
        clearOnComplete: false,
        fps: 10,
        linewrap: false,
      },
      cliProgress.Presets.shades_classic,
    );
  }

  update(snapshot: ProgressSnapshot): void {
    if (snapshot.tasks.length === 0) return;
    const rates = this.meter.next(snapshot);
    const p = pools(snapshot);
    const payload = {
      words: formatInteger(rates.recordsIn),
      totalWords: formatInteger(snapshot.totalRecords),
      rate: formatInteger(rates.recordsPerSecond),
      mbps: `${formatMegabytes(rates.bytesPerSecond)}/s`,
      outPool: p.out,
      inPool: p.in,
      bp: p.bp,
      waiting: waitingSuffix(snapshot),
    };
    if (!this.started) {
      this.started = true;
      this.bar.start(snapshot.totalRecords, rates.recordsIn, payload);
    } else {
      this.bar.update(rates.recordsIn, payload);
    }
  }

  stop(): void {
    if (this.started) this.bar.stop();
  }
}

/** Plain periodic lines, for pipes, files and CI logs. */
class LineView implements ProgressView {
  private readonly meter = new RateMeter();
  private lastPrintMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly stream: NodeJS.WritableStream,
    private readonly everyMs: number,
  ) {}

  update(snapshot: ProgressSnapshot, final = false): void {
    if (snapshot.tasks.length === 0) return;
    if (!final && snapshot.elapsedMs - this.lastPrintMs < this.everyMs) return;
    this.lastPrintMs = snapshot.elapsedMs;
    const rates = this.meter.next(snapshot);
    const p = pools(snapshot);
    const done = snapshot.totalRecords === 0 ? 1 : rates.recordsIn / snapshot.totalRecords;
    this.stream.write(
      `[${(snapshot.elapsedMs / 1000).toFixed(1).padStart(5)}s] ${formatInteger(rates.recordsIn)}/${formatInteger(snapshot.totalRecords)} words (${formatPercent(done)})` +
        `  ${formatInteger(rates.recordsPerSecond)} rec/s  ${formatMegabytes(rates.bytesPerSecond)}/s` +
        `  out pool ${p.out}  in pool ${p.in}  back-pressured ${p.bp}${waitingSuffix(snapshot)}\n`,
    );
  }

  stop(): void {}
}

/** A bar on a terminal, plain lines (every second) otherwise. */
export function createProgressView(stream: NodeJS.WriteStream): ProgressView {
  return stream.isTTY === true ? new BarView(stream) : new LineView(stream, 1000);
}
