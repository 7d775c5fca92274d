/** Number formatting shared by the progress view and the summary. */

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

export function formatInteger(value: number): string {
  return integer.format(value);
}

/** Bytes in MB (10^6), one decimal. */
export function formatMegabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** Milliseconds as seconds with two decimals below a minute. */
export function formatDuration(ms: number): string {
  return ms < 60_000
    ? `${(ms / 1000).toFixed(2)} s`
    : `${Math.floor(ms / 60_000)} min ${((ms % 60_000) / 1000).toFixed(0)} s`;
}

export function formatPercent(fraction: number): string {
  return `${Math.round(fraction * 100)}%`;
}

/** A per-second rate; 0 for an empty interval. */
export function perSecond(amount: number, ms: number): number {
  return ms <= 0 ? 0 : (amount * 1000) / ms;
}

/** Pads the cells of each column to equal width (first column left-aligned, others right). */
export function formatTable(rows: readonly (readonly string[])[], indent = "  "): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows
    .map(
      (row) =>
        indent +
        row
          .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
          .join("  ")
          .trimEnd(),
    )
    .join("\n");
}
