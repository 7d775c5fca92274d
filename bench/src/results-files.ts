import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Line, RESULTS_DIR } from "./harness.js";

/** The lines of one results file. */
export function readLines(path: string): Line[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Line);
}

/** The newest results file, preferring full runs. */
export function newestRunFile(): string {
  const files = readdirSync(RESULTS_DIR)
    .filter((f) => f.endsWith(".jsonl"))
    .sort()
    .reverse();
  if (files.length === 0) throw new Error(`no results in ${RESULTS_DIR}: run pnpm bench first`);
  for (const f of files) {
    const first = readLines(join(RESULTS_DIR, f))[0];
    if (first?.type === "machine" && first.mode === "full") return join(RESULTS_DIR, f);
  }
  return join(RESULTS_DIR, files[0] as string);
}
