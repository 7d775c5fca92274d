/**
 * `pnpm bench` — Sluice side by side with its peers, as ratios from one run.
 *
 *   pnpm bench                  quick run of every case (a few minutes on 2 cores)
 *   pnpm bench -- --full        the long run quoted in docs/benchmarks.md
 *   pnpm bench -- --case 3      one case (repeat or comma-separate for several)
 *   pnpm bench -- --profile sluice-tcp --case 1
 *                               children of that system run with --cpu-prof (see README)
 *
 * Prints a table per case and the goals, and writes bench/results/<timestamp>.jsonl: a machine
 * line, then one line per (case, system) and one per goal.
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
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
  /** `--config key=value` overrides for every Sluice environment. */
  readonly config: Record<string, string>;
}

function usage(): never {
  console.log(
    [
      "usage: node bench/dist/main.js [--full] [--case N[,M]]... [--runs K] [--duration-ms D]",
      "                               [--profile [system,...]] [--profile-dir DIR] [--only system,...]",
      "                               [--config sluice.key=value]...",
      `cases: ${CASES.map((c) => `${c.id} ${c.name}`).join("\n       ")}`,
    ].join("\n"),
  );
  process.exit(2);
}

function parseArgs(argv: readonly string[]): Cli {
  let full = false;
  const cases: number[] = [];
  let runs: number | undefined;
  let duration: number | undefined;
  let profileDir: string | undefined;
  const profileSystems = new Set<string>();
  const only = new Set<string>();
  const config: Record<string, string> = {};
  const args = argv.filter((a) => a !== "--");
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const value = () => {
      const v = args[++i];
      if (v === undefined) usage();
      return v;
    };
    switch (arg) {
      case "--full":
        full = true;
        break;
      case "--case":
        for (const part of value().split(",")) {
          const n = Number(part);
          if (!Number.isInteger(n) || !CASES.some((c) => c.id === n)) usage();
          cases.push(n);
        }
        break;
      case "--runs":
        runs = Number(value());
        break;
      case "--duration-ms":
        duration = Number(value());
        break;
      case "--profile": {
        profileDir ??= join(tmpdir(), `sluice-bench-profiles-${Date.now()}`);
        const next = args[i + 1];
        if (next !== undefined && !next.startsWith("--")) {
          for (const s of value().split(",")) profileSystems.add(s);
        }
        break;
      }
      case "--config": {
        const kv = value();
        const eq = kv.indexOf("=");
        if (eq <= 0) usage();
        config[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case "--only":
        for (const s of value().split(",")) only.add(s);
        break;
      case "--profile-dir":
        profileDir = value();
        break;
      case "--help":
      case "-h":
        usage();
        break;
      default:
        console.error(`unknown argument: ${arg}`);
        usage();
    }
  }
  const durationMs = duration ?? (full ? 3_000 : 800);
  return {
    options: {
      full,
      runs: runs ?? (full ? 5 : 3),
      durationMs,
      warmupMs: Math.round(durationMs / 2),
      profileDir,
      profileSystems,
      only,
    },
    cases: cases.length > 0 ? [...new Set(cases)].sort((a, b) => a - b) : CASES.map((c) => c.id),
    config,
  };
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
  const { options, cases, config } = parseArgs(argv);
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
    const { rows, goals } = await definition.run(ctx);
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
