/**
 * What one case reports in one run: its result rows (one per system and metric, with its medians
 * and spread, or a note when it did not run) and its goal rows, each stamped with the run and the
 * case; and the run's context the case runs with.
 */
import { type BenchOptions, type GoalRow, type ResultRow, stats } from "../harness.js";
import type { CaseContext } from "./case-definition.js";
import { type GoalSpec, goal } from "./goal.js";

/** What one result row says; `values` are the runs' measurements (empty when it did not run). */
export interface RowSpec {
  readonly system: string;
  readonly metric: string;
  readonly higherIsBetter: boolean;
  readonly values: readonly number[];
  readonly extra?: Record<string, unknown>;
  readonly note?: string;
}

/** One case in one run: what it runs with, and how it makes its rows. */
export class CaseReport {
  constructor(
    /** The run the case is part of. */
    readonly ctx: CaseContext,
    private readonly of: { readonly id: number; readonly name: string },
  ) {}

  /** The command line's options. */
  get options(): BenchOptions {
    return this.ctx.options;
  }

  /** Why the WS plugin cannot run, or undefined when it can. */
  get wsUnavailable(): string | undefined {
    return this.ctx.wsUnavailable;
  }

  /** The case's id. */
  get caseId(): number {
    return this.of.id;
  }

  /** The row of `spec`, with the median, min and max of its values. */
  row(spec: RowSpec): ResultRow {
    const s = stats(spec.values);
    return {
      type: "result",
      runId: this.ctx.runId,
      case: this.of.id,
      caseName: this.of.name,
      system: spec.system,
      metric: spec.metric,
      higherIsBetter: spec.higherIsBetter,
      median: s.median,
      min: s.min,
      max: s.max,
      runs: s.runs,
      ...(spec.extra !== undefined ? { extra: spec.extra } : {}),
      ...(spec.note !== undefined ? { note: spec.note } : {}),
    };
  }

  /** The row of a system that did not run (or failed): no values, and `note` says why. */
  skipped(system: string, metric: string, note: string): ResultRow {
    return this.row({ system, metric, higherIsBetter: true, values: [], note });
  }

  /** The goal row of `spec`. */
  goal(spec: GoalSpec): GoalRow {
    return goal(this.ctx.runId, this.of.id, spec);
  }
}
