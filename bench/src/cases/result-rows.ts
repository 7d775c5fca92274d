/**
 * Result rows of a case: one per system and metric, with its medians and spread, a note when it
 * did not run or its checks failed, and the ratio against the system it is compared with.
 */
import { type ResultRow, stats } from "../harness.js";
import type { CaseContext } from "./case-definition.js";

/** What one result row says; `values` are the runs' measurements (empty when it did not run). */
export interface RowSpec {
  readonly caseId: number;
  readonly caseName: string;
  readonly system: string;
  readonly metric: string;
  readonly higherIsBetter: boolean;
  readonly values: readonly number[];
  readonly extra?: Record<string, unknown>;
  readonly note?: string;
}

/** The row of `spec`, with the median, min and max of its values. */
export function row(ctx: CaseContext, spec: RowSpec): ResultRow {
  const s = stats(spec.values);
  return {
    type: "result",
    runId: ctx.runId,
    case: spec.caseId,
    caseName: spec.caseName,
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
export function skipped(
  ctx: CaseContext,
  caseId: number,
  caseName: string,
  system: string,
  metric: string,
  note: string,
): ResultRow {
  return row(ctx, { caseId, caseName, system, metric, higherIsBetter: true, values: [], note });
}

/** Adds `baseline` and `ratio` (median / baseline median) to each row that names a baseline. */
export function withRatios(
  rows: ResultRow[],
  baselineOf: (row: ResultRow) => string | undefined,
): ResultRow[] {
  return rows.map((r) => {
    const baseline = baselineOf(r);
    if (baseline === undefined || baseline === r.system || !Number.isFinite(r.median)) return r;
    const base = rows.find((b) => b.system === baseline);
    const ratio =
      base !== undefined && Number.isFinite(base.median) && base.median !== 0
        ? r.median / base.median
        : Number.NaN;
    return { ...r, baseline, ratio };
  });
}

/** The row of `system`, if the case has one. */
export function findRow(rows: readonly ResultRow[], system: string): ResultRow | undefined {
  return rows.find((r) => r.system === system);
}
