import { execFileSync } from "node:child_process";

/**
 * Tests that fork worker processes (the conformance suite, the demo) run the compiled packages,
 * since child processes cannot load TypeScript. Build once before the run; turbo's cache makes
 * this about a second when nothing changed (and CI has just built).
 *
 * A failed build fails the run: the tests would otherwise run against a stale `dist/` and pass or
 * fail for reasons that have nothing to do with the sources under test.
 * `SLUICE_SKIP_TEST_BUILD=1` skips the build for runs that need no `dist/`.
 */
export default function setup(): void {
  if (process.env.SLUICE_SKIP_TEST_BUILD === "1") return;
  try {
    execFileSync("pnpm", ["exec", "turbo", "run", "build", "--output-logs=errors-only"], {
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      timeout: 600_000,
      env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1", DO_NOT_TRACK: "1" },
    });
  } catch (error) {
    // turbo writes the failing task's log to stdout: the message carries it (and everything the
    // child-process error would add as a cause, which vitest would print a second time).
    const { stdout, stderr, message } = error as Error & { stdout?: string; stderr?: string };
    throw new Error(
      `vitest global setup: the build failed, so the tests are not run against a stale dist/ ` +
        `(SLUICE_SKIP_TEST_BUILD=1 runs the tests that need no build without it).\n` +
        `${stdout || message}${stderr ?? ""}`,
    );
  }
}
