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

/**
 * A goal's note on the row that bounds it: `system`'s median as a multiple of `limit`'s, and
 * `limit`'s own ratio to its baseline. Undefined when either row is missing or the limit has no
 * positive median.
 */
export function ratioToLimit(
  rows: readonly ResultRow[],
  system: string,
  limit: string,
): string | undefined {
  const row = findRow(rows, system);
  const bound = findRow(rows, limit);
  if (row === undefined || bound === undefined || !(bound.median > 0)) return undefined;
  const boundRatio = `${bound.ratio?.toFixed(2) ?? "?"}× ${bound.baseline ?? "its baseline"}`;
  return `${(row.median / bound.median).toFixed(2)}× of ${limit} (${boundRatio})`;
}
