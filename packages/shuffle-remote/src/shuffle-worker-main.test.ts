import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { shuffleWorkerScript } from "./embedded-shuffle-workers.js";

/** This process's environment without settings a ShuffleMaster would pass down. */
function withoutInheritedSettings(): NodeJS.ProcessEnv {
  const { SLUICE_SHUFFLE_WORKER_CONFIG: _, ...env } = process.env;
  return env;
}

/** Runs `sluice-shuffle-worker` (the built script) with `args`; resolves when it exits. */
function run(
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [shuffleWorkerScript(), ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: withoutInheritedSettings(),
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("sluice-shuffle-worker", () => {
  it("prints its usage for --help and exits 0", async () => {
    const { code, stdout, stderr } = await run(["--help"]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: sluice-shuffle-worker \[-D key=value \.\.\.\]/);
    expect(stdout).toContain("remote-shuffle.manager.rpc-address");
    expect(stderr).toBe("");
  }, 30_000);

  it("exits 2 with one line naming an argument it does not know, without a stack trace", async () => {
    const { code, stdout, stderr } = await run(["--port", "9"]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toContain('expected -D key=value or --help, got "--port"');
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 30_000);

  it("exits 2 naming the key of a setting it cannot use", async () => {
    const { code, stderr } = await run(["-D", "remote-shuffle.worker.rpc-port=seventy"]);
    expect(code).toBe(2);
    expect(stderr).toContain("remote-shuffle.worker.rpc-port");
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 30_000);
});
