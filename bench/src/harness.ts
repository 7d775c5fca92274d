/**
 * The benchmark harness: child processes (forked workers speaking a small request/response
 * protocol over IPC, killed on every exit path), statistics over repeated runs, the printed table
 * and the JSONL result file.
 */
import { type ChildProcess, fork, spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const BENCH_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const RESULTS_DIR = join(BENCH_ROOT, "results");
const WORKER_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "worker.js");

// ------------------------------------------------------------------------------------ options

/** Run-wide settings chosen on the command line. */
export interface BenchOptions {
  readonly full: boolean;
  /** Measured runs per (case, system), after one warm-up run. */
  readonly runs: number;
  /** Length of one throughput run. */
  readonly durationMs: number;
  /** Length of the warm-up run. */
  readonly warmupMs: number;
  /** When set, children of these systems run with `--cpu-prof` into this directory. */
  readonly profileDir: string | undefined;
  readonly profileSystems: ReadonlySet<string>;
  /** When not empty, only these systems run (for profiling and investigations). */
  readonly only: ReadonlySet<string>;
}

/** Whether `system` runs in this invocation (see `--only`). */
export function selected(options: BenchOptions, system: string): boolean {
  return options.only.size === 0 || options.only.has(system);
}

// ------------------------------------------------------------------------------ the machine

export interface MachineLine {
  readonly type: "machine";
  readonly runId: string;
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
  readonly date: string;
  readonly mode: "quick" | "full";
  readonly args: readonly string[];
  readonly loadAverage: readonly number[];
  /** Whether producer and consumer children were pinned to different CPUs (taskset). */
  readonly cpuPinning: boolean;
}

export function machineLine(
  runId: string,
  mode: "quick" | "full",
  args: readonly string[],
): MachineLine {
  const list = cpus();
  return {
    type: "machine",
    runId,
    cpu: list[0]?.model.trim() ?? "unknown",
    cores: list.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    date: new Date().toISOString(),
    mode,
    args: [...args],
    loadAverage: loadAverage(),
    cpuPinning: cpuPinning(),
  };
}

function loadAverage(): number[] {
  return loadavg().map((v) => Math.round(v * 100) / 100);
}

// ------------------------------------------------------------------------------- statistics

export interface Stats {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly runs: readonly number[];
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export function stats(values: readonly number[]): Stats {
  return {
    median: median(values),
    min: values.length === 0 ? Number.NaN : Math.min(...values),
    max: values.length === 0 ? Number.NaN : Math.max(...values),
    runs: [...values],
  };
}

/** The `p`-quantile (0..1) of sorted samples, nearest rank. */
export function quantile(sorted: Float64Array | readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[index] as number;
}

// ---------------------------------------------------------------------------- result rows

/** One (case, system) line of the JSONL file. */
export interface ResultRow {
  readonly type: "result";
  readonly runId: string;
  readonly case: number;
  readonly caseName: string;
  readonly system: string;
  /** What the numbers are, e.g. "records/s", "GB/s", "p50 RTT µs", "producer RSS growth MB". */
  readonly metric: string;
  /** True when bigger is better (throughput); false for latency and memory. */
  readonly higherIsBetter: boolean;
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly runs: readonly number[];
  /** The system of the same case the ratio is computed against (its median), if any. */
  readonly baseline?: string;
  /** This median / the baseline's median, from the same run. */
  readonly ratio?: number;
  /** Further measurements (other percentiles, bytes, counts, settings). */
  readonly extra?: Record<string, unknown>;
  /** Set when the system was not run or failed; the numbers are then NaN. */
  readonly note?: string;
}

/** A goal of docs/benchmarks.md and whether this run met it. */
export interface GoalRow {
  readonly type: "goal";
  readonly runId: string;
  readonly case: number;
  readonly goal: string;
  readonly measured: number | null;
  readonly target: number;
  /** How `measured` compares: "≥" (at least) or "≤" (at most). */
  readonly comparison: "≥" | "≤";
  readonly unit: string;
  readonly met: boolean | null;
  readonly note?: string;
}

export type Line = MachineLine | ResultRow | GoalRow;

/** Appends JSON lines to one file per bench invocation. */
export class ResultFile {
  readonly path: string;

  constructor(readonly runId: string) {
    mkdirSync(RESULTS_DIR, { recursive: true });
    this.path = join(RESULTS_DIR, `${runId}.jsonl`);
  }

  append(line: Line): void {
    appendFileSync(this.path, `${JSON.stringify(line, jsonReplacer)}\n`);
  }
}

function jsonReplacer(_key: string, value: unknown): unknown {
  if (typeof value === "number" && !Number.isFinite(value)) return null;
  return value;
}

// ------------------------------------------------------------------------------ formatting

export function formatNumber(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  const abs = Math.abs(value);
  // The unit is picked after rounding: 999,960 is "1.00M", not "1.00e+3k".
  const rounded = (scale: number) => Math.abs(Number((value / scale).toPrecision(digits)));
  if (abs >= 1e9 || rounded(1e6) >= 1000) return `${(value / 1e9).toPrecision(digits)}G`;
  if (abs >= 1e6 || rounded(1e3) >= 1000) return `${(value / 1e6).toPrecision(digits)}M`;
  if (abs >= 1e4) return `${(value / 1e3).toPrecision(digits)}k`;
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 1) return value.toPrecision(digits);
  if (abs === 0) return "0";
  return value.toPrecision(2);
}

export function formatRatio(ratio: number | undefined): string {
  if (ratio === undefined || !Number.isFinite(ratio)) return "";
  if (ratio >= 10) return `${ratio.toFixed(0)}×`;
  if (ratio >= 0.1) return `${ratio.toFixed(2)}×`;
  return `${ratio.toPrecision(2)}×`;
}

/** Prints rows as an aligned table. */
export function printTable(title: string, rows: readonly ResultRow[]): void {
  const header = ["system", "metric", "median", "min", "max", "vs baseline", "note"];
  const body = rows.map((r) => [
    r.system,
    r.metric,
    formatNumber(r.median),
    formatNumber(r.min),
    formatNumber(r.max),
    r.baseline !== undefined && r.ratio !== undefined
      ? `${formatRatio(r.ratio)} ${r.baseline}`
      : "",
    r.note ?? "",
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...body.map((row) => (row[i] as string).length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) =>
        i >= 2 && i <= 4 ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number),
      )
      .join("  ");
  console.log(`\n${title}`);
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of body) console.log(line(row).trimEnd());
}

export function printGoals(goals: readonly GoalRow[]): void {
  for (const g of goals) {
    const status = g.met === null ? "NOT RUN" : g.met ? "met" : "MISSED";
    const measured = g.measured === null ? "—" : formatNumber(g.measured);
    console.log(
      `  goal case ${g.case}: ${g.goal}: measured ${measured} ${g.unit} (target ${g.comparison} ${formatNumber(g.target)}) → ${status}${g.note ? ` (${g.note})` : ""}`,
    );
  }
}

// ------------------------------------------------------------------------- child processes

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

const liveChildren = new Set<Child>();
let exitHooksInstalled = false;

function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.on("exit", () => killAllChildren());
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      killAllChildren();
      process.exit(130);
    });
  }
  process.on("uncaughtException", (error) => {
    console.error("bench: uncaught exception:", error);
    killAllChildren();
    process.exit(1);
  });
  process.on("unhandledRejection", (error) => {
    console.error("bench: unhandled rejection:", error);
    killAllChildren();
    process.exit(1);
  });
}

/** Kills every child still running (by pid, each one we forked). */
export function killAllChildren(): void {
  for (const child of liveChildren) child.kill();
}

/** A forked worker process (dist/worker.js) answering requests over IPC. */
export class Child {
  readonly name: string;
  private readonly process: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private exited = false;
  private exitError: Error | undefined;
  readonly exitedPromise: Promise<void>;

  constructor(name: string, execArgv: readonly string[] = [], cpu?: number) {
    installExitHooks();
    this.name = name;
    const nodeArgs = ["--max-old-space-size=4096", ...execArgv];
    const pin = cpu !== undefined ? pinning(cpu) : undefined;
    this.process = fork(WORKER_SCRIPT, [name], {
      // Pinned: `taskset -c N node <args>` (taskset execs node, which inherits the IPC channel).
      ...(pin !== undefined
        ? { execPath: pin.execPath, execArgv: [...pin.args, process.execPath, ...nodeArgs] }
        : { execArgv: nodeArgs }),
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      serialization: "advanced",
    });
    liveChildren.add(this);
    this.process.on(
      "message",
      (message: { id: number; ok: boolean; result?: unknown; error?: string }) => {
        const pending = this.pending.get(message.id);
        if (pending === undefined) return;
        this.pending.delete(message.id);
        clearTimeout(pending.timer);
        if (message.ok) pending.resolve(message.result);
        else pending.reject(new Error(`${this.name}: ${message.error}`));
      },
    );
    this.exitedPromise = new Promise((resolve) => {
      this.process.once("exit", (code, signal) => {
        this.exited = true;
        liveChildren.delete(this);
        this.exitError = new Error(`${this.name} exited (code ${code}, signal ${signal})`);
        for (const pending of this.pending.values()) {
          clearTimeout(pending.timer);
          pending.reject(this.exitError);
        }
        this.pending.clear();
        resolve();
      });
    });
    this.process.on("error", (error) => {
      // Spawning, killing or messaging the child failed. Pending requests are rejected on
      // 'exit' (or time out, since 'exit' may not follow); the cause goes to the output.
      console.error(`bench: ${this.name}: ${error.message}`);
    });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  /** Sends a request; rejects after `timeoutMs` (and kills the child, which may be stuck). */
  request<T>(op: string, args: unknown, timeoutMs: number): Promise<T> {
    if (this.exited) return Promise.reject(this.exitError ?? new Error(`${this.name} has exited`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.name}: '${op}' timed out after ${timeoutMs} ms`));
        this.kill();
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer });
      this.process.send({ id, op, args });
    });
  }

  /** Asks the child to exit, waits up to `graceMs`, then kills it. */
  async close(graceMs = 5_000): Promise<void> {
    if (this.exited) return;
    try {
      this.process.send({ id: 0, op: "exit", args: null });
    } catch {
      // The channel is gone: kill below.
    }
    const timer = setTimeout(() => this.kill(), graceMs);
    await this.exitedPromise;
    clearTimeout(timer);
  }

  kill(): void {
    if (this.exited) return;
    try {
      this.process.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

// ------------------------------------------------------------------------------ CPU pinning

let tasksetPath: string | null | undefined;

/**
 * How to pin a child to one CPU, or undefined when pinning is off or impossible. Producer and
 * consumer of a case go to different CPUs: left to the scheduler on a 2-core machine, the two
 * sometimes share one core for a whole session, which halves a run's throughput (measured here:
 * a raw-net session stayed at 0.26-0.29 GB/s while the next one ran at 0.56-0.99 GB/s).
 */
function pinning(cpu: number): { execPath: string; args: string[] } | undefined {
  if (process.env.SLUICE_BENCH_NO_PIN !== undefined || process.platform !== "linux")
    return undefined;
  const cores = cpus().length;
  if (cores < 2) return undefined;
  if (tasksetPath === undefined) {
    tasksetPath = ["/usr/bin/taskset", "/bin/taskset"].find((p) => existsSync(p)) ?? null;
  }
  if (tasksetPath === null) return undefined;
  return { execPath: tasksetPath, args: ["-c", String(cpu % cores)] };
}

/**
 * Lets a process another child started (a shuffle worker of the remote shuffle, forked by the
 * writer) run on every CPU rather than on the CPU its parent was pinned to, as it would on a host
 * of its own. A no-op when children are not pinned.
 */
export function unpin(pid: number): void {
  if (pinning(0) === undefined || tasksetPath === null || tasksetPath === undefined) return;
  spawnSync(tasksetPath, ["-a", "-p", "-c", `0-${cpus().length - 1}`, String(pid)], {
    stdio: "ignore",
  });
}

/** True when children are pinned to CPUs (recorded in the machine line). */
export function cpuPinning(): boolean {
  return pinning(0) !== undefined;
}

/** Runs `body` with children that are closed (or killed) whatever happens. */
export async function withChildren<T>(
  names: readonly string[],
  execArgvOf: (name: string) => readonly string[],
  body: (children: Child[]) => Promise<T>,
): Promise<T> {
  const children = names.map((name, i) => new Child(name, execArgvOf(name), i));
  try {
    return await body(children);
  } finally {
    await Promise.all(children.map((c) => c.close()));
  }
}

/** `--cpu-prof` arguments for a child of `system` when profiling was asked for it. */
export function profileArgs(options: BenchOptions, system: string, childName: string): string[] {
  if (options.profileDir === undefined) return [];
  if (options.profileSystems.size > 0 && !options.profileSystems.has(system)) return [];
  const dir = join(options.profileDir, `${system}-${childName}`.replace(/[^a-zA-Z0-9_.-]+/g, "_"));
  return ["--cpu-prof", `--cpu-prof-dir=${dir}`];
}
