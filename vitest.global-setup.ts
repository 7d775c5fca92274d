import { execFileSync } from "node:child_process";

/**
 * Tests that fork worker processes (the conformance suite, the demo) run the compiled packages,
 * since child processes cannot load TypeScript. Build once before the run; turbo's cache makes
 * this about a second when nothing changed (and CI has just built).
 */
export default function setup(): void {
  if (process.env.SLUICE_SKIP_TEST_BUILD === "1") return;
  try {
    execFileSync("pnpm", ["exec", "turbo", "run", "build", "--output-logs=errors-only"], {
      stdio: ["ignore", "ignore", "inherit"],
      timeout: 600_000,
      env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1", DO_NOT_TRACK: "1" },
    });
  } catch (error) {
    // Tests that need built output will say so themselves; the rest still run.
    console.warn(`vitest global setup: build failed (${(error as Error).message})`);
  }
}
