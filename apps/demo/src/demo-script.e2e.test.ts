/**
 * The root `pnpm demo` script as a user runs it. It builds what the demo needs before it starts
 * (turbo's cache makes that quick once the test run's own build is done) and says so on stderr
 * first, so that the first run is not a silent minute; stdout stays the demo's own.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { lastJsonLine, REPO } from "./test-support/demo-process.js";

function runPnpm(
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("pnpm", args, { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("pnpm demo", () => {
  it("says on stderr that it is building before anything else, and leaves stdout to the demo's JSON summary", async () => {
    const run = await runPnpm(["--silent", "demo", "--", "--records", "20k", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr.split("\n")[0]).toBe("building the demo (first run: about a minute)…");
    expect(run.stdout).not.toContain("building the demo");
    expect(lastJsonLine(run.stdout)).toMatchObject({ verified: true, records: 20_000 });
  }, 300_000);
});
