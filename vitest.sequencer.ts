import { readFileSync } from "node:fs";
import path from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** Seconds each test file took in a whole run, written by `scripts/record-test-durations.mjs`. */
const DURATIONS_FILE = path.join(import.meta.dirname, "vitest.durations.json");

/**
 * Runs the test files that took longest first when Vitest has no durations of its own.
 *
 * Vitest orders by the durations in its cache (`node_modules/.vite`), which a fresh clone does
 * not have: it then keeps the glob's order, and the multi-process conformance suites (about a
 * minute each, under `packages/shuffle-*`) started last, leaving one worker busy with them long
 * after the other ran out of files. With durations recorded in the repository, the long files
 * start first and the short ones fill the gaps. Files with no recorded duration (new ones) run
 * first, as Vitest runs unknown files first. Once Vitest's own cache knows every file, its order
 * is used unchanged.
 */
export default class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const root = this.ctx.config.root;
    const cached = files.every(
      (file) =>
        cache.getFileTestResults(`${file.project.name}:${path.relative(root, file.moduleId)}`) !==
        undefined,
    );
    if (cached) return super.sort(files);
    const recorded = readDurations();
    const seconds = (file: TestSpecification) =>
      recorded[path.relative(root, file.moduleId).split(path.sep).join("/")] ??
      Number.POSITIVE_INFINITY;
    return [...files].sort((a, b) => seconds(b) - seconds(a));
  }
}

function readDurations(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(DURATIONS_FILE, "utf8")) as Record<string, number>;
  } catch (error) {
    // Only the order depends on it: a missing file leaves Vitest's own order.
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw error;
  }
}
