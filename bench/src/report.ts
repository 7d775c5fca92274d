/**
 * Prints the results of one run as Markdown tables (the tables of docs/benchmarks.md are made
 * with it, so the document quotes the JSONL file exactly):
 *
 *   node bench/dist/report.js [bench/results/<run>.jsonl]
 */
import { basename } from "node:path";
import { parseArgs } from "node:util";
import {
  formatNumber,
  formatRatio,
  type GoalRow,
  type Line,
  type MachineLine,
  type ResultRow,
} from "./harness.js";
import { newestRunFile, readLines } from "./results-files.js";

function extraText(row: ResultRow): string {
  const e = row.extra ?? {};
  const parts: string[] = [];
  if (typeof e.p99 === "number")
    parts.push(`p99 ${formatNumber(e.p99)} µs, p99.9 ${formatNumber(e.p999 as number)} µs`);
  if (typeof e.GBps === "number") parts.push(`${(e.GBps as number).toFixed(3)} GB/s`);
  if (typeof e.payloadMBps === "number" && row.metric === "records/s")
    parts.push(`${formatNumber(e.payloadMBps as number)} MB/s payload`);
  if (typeof e.consumerMBps === "number")
    parts.push(`consumer read ${(e.consumerMBps as number).toFixed(2)} MB/s`);
  return parts.join("; ");
}

export function renderMarkdown(lines: readonly Line[], source: string): string {
  const out: string[] = [];
  const machine = lines.find((l): l is MachineLine => l.type === "machine");
  if (machine !== undefined) {
    out.push(
      `Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.node} ` +
        `(${machine.platform}); ${machine.date}; ${machine.mode} run (\`${machine.args.join(" ") || "(no args)"}\`); ` +
        `load average at start ${machine.loadAverage.join(" / ")}. Source: \`bench/results/${basename(source)}\`.`,
      "",
    );
  }
  const rows = lines.filter((l): l is ResultRow => l.type === "result");
  const goals = lines.filter((l): l is GoalRow => l.type === "goal");
  const cases = [...new Set(rows.map((r) => r.case))].sort((a, b) => a - b);
  for (const c of cases) {
    const caseRows = rows.filter((r) => r.case === c);
    out.push(`### Case ${c}: ${caseRows[0]?.caseName ?? ""}`, "");
    out.push("| system | metric | median | min | max | ratio (median ÷ baseline median) | notes |");
    out.push("| --- | --- | ---: | ---: | ---: | --- | --- |");
    for (const r of caseRows) {
      const ratio =
        r.ratio !== undefined && Number.isFinite(r.ratio)
          ? `${formatRatio(r.ratio)} ${r.baseline}`
          : r.baseline === undefined
            ? ""
            : "—";
      const notes = [extraText(r), r.note ?? ""].filter((t) => t !== "").join("; ");
      out.push(
        `| ${r.system} | ${r.metric} | ${formatNumber(r.median)} | ${formatNumber(r.min)} | ${formatNumber(r.max)} | ${ratio} | ${notes.replace(/\|/g, "\\|")} |`,
      );
    }
    const caseGoals = goals.filter((g) => g.case === c);
    if (caseGoals.length > 0) {
      out.push("");
      for (const g of caseGoals) {
        const status = g.met === null ? "**not run**" : g.met ? "**met**" : "**missed**";
        const measured = g.measured === null ? "—" : formatNumber(g.measured);
        out.push(
          `- Goal: ${g.goal} — measured ${measured} ${g.unit} (target ${g.comparison} ${formatNumber(g.target)}): ${status}${g.note ? ` (${g.note})` : ""}`,
        );
      }
    }
    out.push("");
  }
  return out.join("\n");
}

function main(): void {
  const { positionals } = parseArgs({ allowPositionals: true, options: {} });
  if (positionals.length > 1) {
    console.error("usage: node bench/dist/report.js [<run>.jsonl]");
    process.exit(2);
  }
  const source = positionals[0] ?? newestRunFile();
  console.log(renderMarkdown(readLines(source), source));
}

main();
