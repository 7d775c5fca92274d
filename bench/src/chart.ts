/**
 * Draws bench/results/chart.svg from one results file (hand-built SVG, no dependency):
 *
 *   node bench/dist/chart.js [bench/results/<run>.jsonl] [--out path.svg]
 *
 * Without a file it takes the newest full-mode run (or the newest run). One panel per case:
 * a bar per system at its median with a min–max whisker, the ratio to the case's baseline, and
 * the goals of that case below it (met in green, missed in red).
 */
import { writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import {
  formatNumber,
  formatRatio,
  type GoalRow,
  type Line,
  type MachineLine,
  RESULTS_DIR,
  type ResultRow,
} from "./harness.js";
import { newestRunFile, readLines } from "./results-files.js";

const WIDTH = 1040;
const LABEL_W = 240;
const BAR_X = LABEL_W + 10;
const BAR_W = 420;
const ROW_H = 22;
const FONT = 'font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"';

function escapeXml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}

interface Panel {
  readonly caseId: number;
  readonly title: string;
  readonly rows: ResultRow[];
  readonly goals: GoalRow[];
}

function panelsOf(lines: readonly Line[]): Panel[] {
  const panels = new Map<number, Panel>();
  for (const line of lines) {
    if (line.type === "result") {
      let p = panels.get(line.case);
      if (p === undefined) {
        p = { caseId: line.case, title: line.caseName, rows: [], goals: [] };
        panels.set(line.case, p);
      }
      p.rows.push(line);
    }
  }
  for (const line of lines) {
    if (line.type === "goal") panels.get(line.case)?.goals.push(line);
  }
  return [...panels.values()].sort((a, b) => a.caseId - b.caseId);
}

function color(row: ResultRow): string {
  if (
    row.system.startsWith("sluice") ||
    row.system.startsWith("core") ||
    row.system.startsWith("in-process")
  ) {
    return row.system.includes("ws") ? "#2f7ed8" : "#1a5fb4";
  }
  return "#9a9996";
}

function drawPanel(panel: Panel, y0: number): { svg: string; height: number } {
  const parts: string[] = [];
  const rows = panel.rows;
  const finite = rows.flatMap((r) => [r.median, r.max]).filter((v) => Number.isFinite(v) && v > 0);
  const maxValue = finite.length > 0 ? Math.max(...finite) : 1;
  const minValue = finite.length > 0 ? Math.min(...finite) : 1;
  const logScale = maxValue / minValue > 100;
  const scale = (v: number): number => {
    if (!Number.isFinite(v) || v <= 0) return 0;
    if (!logScale) return (v / maxValue) * BAR_W;
    const lo = Math.log10(minValue) - 0.3;
    return Math.max(2, ((Math.log10(v) - lo) / (Math.log10(maxValue) - lo)) * BAR_W);
  };
  const metric = rows.find((r) => Number.isFinite(r.median))?.metric ?? rows[0]?.metric ?? "";
  const better = rows[0]?.higherIsBetter === false ? "lower is better" : "higher is better";
  parts.push(
    `<text x="10" y="${y0 + 18}" ${FONT} font-size="14" font-weight="bold">${escapeXml(`Case ${panel.caseId}: ${panel.title}`)}</text>`,
    `<text x="10" y="${y0 + 34}" ${FONT} font-size="11" fill="#555">${escapeXml(`${metric} (median of runs, whisker = min..max; ${better}${logScale ? "; log scale" : ""})`)}</text>`,
  );
  let y = y0 + 44;
  for (const row of rows) {
    const w = scale(row.median);
    parts.push(
      `<text x="${LABEL_W}" y="${y + 15}" ${FONT} font-size="12" text-anchor="end">${escapeXml(row.system)}</text>`,
    );
    if (Number.isFinite(row.median)) {
      parts.push(
        `<rect x="${BAR_X}" y="${y + 4}" width="${w.toFixed(1)}" height="${ROW_H - 8}" fill="${color(row)}"/>`,
      );
      if (Number.isFinite(row.min) && Number.isFinite(row.max) && row.max > row.min) {
        const x1 = BAR_X + scale(row.min);
        const x2 = BAR_X + scale(row.max);
        const cy = y + ROW_H / 2;
        parts.push(
          `<line x1="${x1.toFixed(1)}" y1="${cy}" x2="${x2.toFixed(1)}" y2="${cy}" stroke="#000" stroke-width="1"/>`,
          `<line x1="${x1.toFixed(1)}" y1="${cy - 4}" x2="${x1.toFixed(1)}" y2="${cy + 4}" stroke="#000"/>`,
          `<line x1="${x2.toFixed(1)}" y1="${cy - 4}" x2="${x2.toFixed(1)}" y2="${cy + 4}" stroke="#000"/>`,
        );
      }
      const ratio =
        row.ratio !== undefined && Number.isFinite(row.ratio)
          ? `  ${formatRatio(row.ratio)} ${row.baseline}`
          : "";
      const extraP99 =
        typeof row.extra?.p99 === "number" ? `  p99 ${formatNumber(row.extra.p99 as number)}` : "";
      parts.push(
        `<text x="${BAR_X + BAR_W + 12}" y="${y + 15}" ${FONT} font-size="11">${escapeXml(`${formatNumber(row.median)}${extraP99}${ratio}`)}</text>`,
      );
    } else {
      parts.push(
        `<text x="${BAR_X}" y="${y + 15}" ${FONT} font-size="11" fill="#a51d2d">${escapeXml((row.note ?? "no data").slice(0, 90))}</text>`,
      );
    }
    y += ROW_H;
  }
  for (const g of panel.goals) {
    const status = g.met === null ? "not run" : g.met ? "met" : "MISSED";
    const fill = g.met === null ? "#777" : g.met ? "#26a269" : "#c01c28";
    const measured = g.measured === null ? "—" : formatNumber(g.measured);
    parts.push(
      `<text x="24" y="${y + 14}" ${FONT} font-size="11" fill="${fill}">${escapeXml(`goal: ${g.goal} — ${measured} ${g.unit} (target ${g.comparison} ${formatNumber(g.target)}): ${status}`)}</text>`,
    );
    y += 18;
  }
  return { svg: parts.join("\n"), height: y - y0 + 16 };
}

export function renderChart(lines: readonly Line[], source: string): string {
  const machine = lines.find((l): l is MachineLine => l.type === "machine");
  const header = machine
    ? `${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, ${machine.date.slice(0, 19)}Z, ${machine.mode} run`
    : "";
  const panels = panelsOf(lines);
  const body: string[] = [];
  let y = 56;
  for (const panel of panels) {
    const { svg, height } = drawPanel(panel, y);
    body.push(svg);
    y += height;
  }
  const height = y + 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="22" ${FONT} font-size="16" font-weight="bold">Sluice benchmarks, side by side (bench/results/${escapeXml(basename(source))})</text>`,
    `<text x="10" y="40" ${FONT} font-size="11" fill="#555">${escapeXml(header)}</text>`,
    ...body,
    "</svg>",
    "",
  ].join("\n");
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { out: { type: "string" } },
  });
  if (positionals.length > 1) {
    console.error("usage: node bench/dist/chart.js [<run>.jsonl] [--out <file.svg>]");
    process.exit(2);
  }
  const out = values.out ?? join(RESULTS_DIR, "chart.svg");
  const source = positionals[0] ?? newestRunFile();
  writeFileSync(out, renderChart(readLines(source), source));
  console.log(`chart of ${source} → ${out}`);
}

main();
