/**
 * `pnpm bench` — Sluice side by side with its peers, as ratios from one run.
 *
 *   pnpm bench                  quick run of every case (a few minutes on 2 cores)
 *   pnpm bench -- --full        the long run quoted in docs/benchmarks.md
 *   pnpm bench -- --case 3      one case (repeat or comma-separate for several)
 *   pnpm bench -- --profile sluice-tcp --case 1
 *                               children of that system run with --cpu-prof (see README)
 *   pnpm bench -- --case 3 -D taskmanager.network.memory.buffers-per-channel=8
 *                               what-if: a config override for every Sluice environment
 *
 * Prints a table per case and the goals, and writes bench/results/<timestamp>.jsonl: a machine
 * line, then one line per (case, system) and one per goal.
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parseDynamicProperties } from "@sluice/runtime";
import { CaseReport } from "./cases/case-report.js";
import { CASES, type CaseContext, setConfigOverrides } from "./cases/cases.js";
import {
  type BenchOptions,
  Child,
  type GoalRow,
  killAllChildren,
  machineLine,
  printGoals,
  printTable,
  ResultFile,
  type ResultRow,
} from "./harness.js";

interface Cli {
  readonly options: BenchOptions;
  readonly cases: number[];
  /** `-D key=value` overrides for every Sluice environment. */
  readonly config: Record<string, string>;
}

const USAGE = [
  "usage: node bench/dist/main.js [--full] [--case N[,M]]... [--runs K] [--duration-ms D]",
  "                               [--profile [system,...]] [--profile-dir DIR] [--only system,...]",
  "                               [-D sluice.key=value]...",
  `cases: ${CASES.map((c) => `${c.id} ${c.name}`).join("\n       ")}`,
].join("\n");

/** A bad command line: the message says what; main prints it with the usage and exits 2. */
class UsageError extends Error {}

function positiveNumber(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) {
    throw new UsageError(`${option} expects a positive number, got ${JSON.stringify(text)}`);
  }
  return value;
}

function list(values: readonly string[] | undefined): string[] {
  return (values ?? []).flatMap((value) => value.split(",")).filter((part) => part !== "");
}

/**
 * Parses the command line: `-D key=value` (the runtime's Flink-style dynamic properties), then
 * the bench's own options with `node:util` `parseArgs`.
 *
 * @throws UsageError for an unknown option, a missing or malformed value, an unknown case.
 */
function parseCli(argv: readonly string[]): Cli | "help" {
  let dynamic: ReturnType<typeof parseDynamicProperties>;
  try {
    dynamic = parseDynamicProperties(argv.filter((a) => a !== "--"));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (dynamic.remaining.includes("--config")) {
    throw new UsageError("--config key=value is now -D key=value (Flink's syntax, as the demo's)");
  }
  // `--profile` takes an optional list: alone, it profiles every system.
  const args = dynamic.remaining.flatMap((arg, i, all) =>
    arg === "--profile" && (all[i + 1] === undefined || all[i + 1]?.startsWith("-"))
      ? ["--profile="]
      : [arg],
  );
  let values: ReturnType<typeof parseOptions>["values"];
  try {
    const parsed = parseOptions(args);
    if (parsed.positionals.length > 0) {
      throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[0])}`);
    }
    values = parsed.values;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError((error as Error).message);
  }
  if (values.help === true) return "help";
  const cases = list(values.case).map((part) => {
    const n = Number(part);
    if (!Number.isInteger(n) || !CASES.some((c) => c.id === n)) {
      throw new UsageError(`--case expects case ids, got ${JSON.stringify(part)}`);
    }
    return n;
  });
  const full = values.full === true;
  const durationMs = positiveNumber("--duration-ms", values["duration-ms"]) ?? (full ? 3_000 : 800);
  const profiling = values.profile !== undefined || values["profile-dir"] !== undefined;
  return {
    options: {
      full,
      runs: positiveNumber("--runs", values.runs) ?? (full ? 5 : 3),
      durationMs,
      warmupMs: Math.round(durationMs / 2),
      profileDir: profiling
        ? (values["profile-dir"] ?? join(tmpdir(), `sluice-bench-profiles-${Date.now()}`))
        : undefined,
      profileSystems: new Set(list(values.profile)),
      only: new Set(list(values.only)),
    },
    cases: cases.length > 0 ? [...new Set(cases)].sort((a, b) => a - b) : CASES.map((c) => c.id),
    config: Object.fromEntries(dynamic.properties),
  };
}

function parseOptions(args: readonly string[]) {
  return parseArgs({
    args: [...args],
    strict: true,
    allowPositionals: true,
    options: {
      full: { type: "boolean" },
      case: { type: "string", multiple: true },
      runs: { type: "string" },
      "duration-ms": { type: "string" },
      profile: { type: "string", multiple: true },
      "profile-dir": { type: "string" },
      only: { type: "string", multiple: true },
      help: { type: "boolean", short: "h" },
    },
  });
}

async function wsAvailability(): Promise<string | undefined> {
  const child = new Child("ws-probe");
  try {
    const reason = await child.request<string | null>("wsAvailability", null, 30_000);
    return reason ?? undefined;
  } catch (error) {
    return `@sluice/shuffle-ws cannot be loaded: ${(error as Error).message}`;
  } finally {
    await child.close();
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let cli: Cli | "help";
  try {
    cli = parseCli(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`error: ${error.message}\n${USAGE}`);
    process.exit(2);
  }
  if (cli === "help") {
    console.log(USAGE);
    process.exit(0);
  }
  const { options, cases, config } = cli;
  setConfigOverrides(config);
  if (Object.keys(config).length > 0)
    console.log(`Sluice config overrides: ${JSON.stringify(config)}`);
  const runId = new Date().toISOString().replace(/[:.]/g, "-");
  const file = new ResultFile(runId);
  const machine = machineLine(runId, options.full ? "full" : "quick", argv);
  file.append(machine);
  console.log(
    `sluice bench (${machine.mode}): ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ` +
      `Node ${machine.node}, ${machine.date}, load ${machine.loadAverage.join(" ")}, ` +
      `${machine.cpuPinning ? "producer/consumer pinned to CPU 0/1" : "no CPU pinning"}`,
  );
  console.log(
    `runs: 1 warm-up + ${options.runs} measured × ${options.durationMs} ms per system; results → ${file.path}`,
  );
  const wsUnavailable = await wsAvailability();
  if (wsUnavailable !== undefined)
    console.log(`note: Sluice WS cases are skipped: ${wsUnavailable}`);
  if (options.profileDir !== undefined)
    console.log(`profiles (--cpu-prof) → ${options.profileDir}`);
  const ctx: CaseContext = { options, runId, wsUnavailable };
  const started = performance.now();
  const allGoals: GoalRow[] = [];
  const allRows: ResultRow[] = [];
  for (const id of cases) {
    const definition = CASES.find((c) => c.id === id);
    if (definition === undefined) continue;
    const caseStart = performance.now();
    console.log(`\ncase ${id}: ${definition.name}`);
    const { rows, goals } = await definition.run(new CaseReport(ctx, definition));
    for (const r of rows) file.append(r);
    for (const g of goals) file.append(g);
    allRows.push(...rows);
    allGoals.push(...goals);
    printTable(
      `case ${id}: ${definition.name} (${((performance.now() - caseStart) / 1000).toFixed(0)} s)`,
      rows,
    );
    printGoals(goals);
  }
  console.log(
    `\ngoals (${allGoals.filter((g) => g.met === true).length} met, ${allGoals.filter((g) => g.met === false).length} missed, ${allGoals.filter((g) => g.met === null).length} not run):`,
  );
  printGoals(allGoals);
  const invalid = allRows.filter((r) => r.note?.startsWith("INVALID"));
  if (invalid.length > 0)
    console.log(`\n${invalid.length} row(s) failed their delivery check: see notes above`);
  console.log(`\ndone in ${((performance.now() - started) / 1000).toFixed(0)} s; ${file.path}`);
  console.log(`chart: node bench/dist/chart.js ${file.path.replace(`${process.cwd()}/`, "")}`);
}

main().then(
  () => {
    killAllChildren();
    process.exit(0);
  },
  (error: unknown) => {
    console.error(error);
    killAllChildren();
    process.exit(1);
  },
);
