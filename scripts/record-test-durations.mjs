#!/usr/bin/env node
/**
 * Records how long each test file took, from a Vitest JSON report, in vitest.durations.json,
 * which vitest.sequencer.ts reads to start the longest files first on a fresh clone.
 *
 *   pnpm test:durations            runs every test with the JSON reporter, then records
 *   node scripts/record-test-durations.mjs REPORT.json
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const reportPath = process.argv[2];
if (reportPath === undefined) {
  console.error("usage: node scripts/record-test-durations.mjs REPORT.json");
  process.exit(2);
}
const report = JSON.parse(readFileSync(reportPath, "utf8"));
const durations = report.testResults
  .map((file) => [
    path.relative(root, file.name).split(path.sep).join("/"),
    // Tenths of a second: only the order matters, and fewer digits change between runs.
    Math.round((file.endTime - file.startTime) / 100) / 10,
  ])
  .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1));
const out = path.join(root, "vitest.durations.json");
writeFileSync(out, `${JSON.stringify(Object.fromEntries(durations), null, 2)}\n`);
console.log(`recorded ${durations.length} test files in ${path.relative(root, out)}`);
