import { defaultServerConditions } from "vite";
import { defineConfig } from "vitest/config";
import SlowestFirstSequencer from "./vitest.sequencer.js";

export default defineConfig({
  // Resolve workspace packages (@sluice/*) to their TypeScript source via the
  // "@sluice/source" export condition: tests need no prior build.
  ssr: { resolve: { conditions: ["@sluice/source", ...defaultServerConditions] } },
  test: {
    // Only sources: Vitest 4's default exclude no longer skips dist/ (which holds no tests
    // since the builds use tsconfig.build.json, but may be stale in an old checkout).
    include: ["**/src/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/dist/**"],
    // The second gives the run a folder for the registry the install tests publish the packages
    // to; the first test file that installs starts it, so other runs pay nothing.
    globalSetup: [
      "./vitest.global-setup.ts",
      "./examples/src/test-support/test-registry-global-setup.ts",
    ],
    // Three test files at a time on 2 cores (Vitest's default is cores − 1): most e2e time is
    // spent waiting on child processes, heartbeats and leases, which overlap well. A clean-clone
    // CI run took 634 s of Vitest with three, 762 s with two (the tests' summed time rose from
    // 1354 to 1627 s: a third file mostly fills the waits).
    maxWorkers: 3,
    // The longest files first (their durations are recorded in vitest.durations.json): a fresh
    // clone has no durations of Vitest's own, and its glob order started the longest last.
    sequence: { sequencer: SlowestFirstSequencer },
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
