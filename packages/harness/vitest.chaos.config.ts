import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import base from "../../vitest.config.js";

/** The repository's root: the base config's paths are relative to it. */
const REPO = fileURLToPath(new URL("../..", import.meta.url));

/**
 * `pnpm test:chaos`: the chaos suite across network namespaces (packages/harness/src/chaos/*.chaos.ts),
 * which takes minutes and needs root; its short version runs with the normal tests. The base
 * config's source condition and build set-up, with only these files.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    // Paths relative to the repository, where the base config's set-up files are.
    root: REPO,
    include: ["packages/harness/src/chaos/**/*.chaos.ts"],
    // One file at a time: the scenarios measure throughput and recovery times, which a second
    // cluster on the same two cores would distort.
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 300_000,
  },
});
