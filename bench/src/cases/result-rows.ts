/** Ratios between a case's result rows, and finding a system's row. */
import type { ResultRow } from "../harness.js";

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
