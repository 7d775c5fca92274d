/**
 * What every benchmark case of docs/benchmarks.md is: an id, a name, and a run that produces
 * result rows (medians, min/max, ratios against the case's baseline from the same run) and the
 * goal rows computed from them.
 */
import type { BenchOptions, GoalRow, ResultRow } from "../harness.js";
import type { CaseReport } from "./case-report.js";

/** What a case runs with: the command line's options and facts about this run. */
export interface CaseContext {
  readonly options: BenchOptions;
  readonly runId: string;
  /** Why the WS plugin cannot run, or undefined when it can. */
  readonly wsUnavailable: string | undefined;
}

/** A case's output: one row per system (and metric), and its goals. */
export interface CaseResult {
  readonly rows: ResultRow[];
  readonly goals: GoalRow[];
}

/** One benchmark case. */
export interface CaseDefinition {
  readonly id: number;
  readonly name: string;
  /** Runs the case; `report` makes its rows and carries the run's context. */
  run(report: CaseReport): Promise<CaseResult>;
}

/** A progress line on stdout while a case runs. */
export function log(message: string): void {
  console.log(`  … ${message}`);
}

/** The first non-empty line of an error's message (at most 300 characters), for a row's note. */
export function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return (text.split("\n").find((l) => l.trim() !== "") ?? text).slice(0, 300);
}
