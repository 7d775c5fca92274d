/**
 * End-to-end runs of the demo as an operator starts it: `node apps/demo/dist/main.js ...`, with
 * real task-manager processes. Child processes run compiled JavaScript, so the demo (and the
 * packages it uses) is built first when dist/ is missing or older than the sources.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { waitFor } from "@sluice/core/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const REPO = path.resolve(APP_DIR, "../..");
const MAIN = path.join(APP_DIR, "dist/main.js");
const WORKSPACE_DEPS = ["core", "runtime-api", "runtime", "network", "shuffle-tcp", "shuffle-ws"];

/** True when some source file of `src` has no compiled counterpart in `dist` at least as new. */
function staleOutput(src: string, dist: string): boolean {
  for (const entry of readdirSync(src, { withFileTypes: true })) {
    const file = path.join(src, entry.name);
    if (entry.isDirectory()) {
      if (staleOutput(file, path.join(dist, entry.name))) return true;
    } else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts")) {
      const output = path.join(dist, entry.name.replace(/\.ts$/, ".js"));
      if (!existsSync(output) || statSync(output).mtimeMs < statSync(file).mtimeMs) return true;
    }
  }
  return false;
}

function needsBuild(): boolean {
  if (WORKSPACE_DEPS.some((dep) => !existsSync(path.join(REPO, "packages", dep, "dist/index.js"))))
    return true;
  return staleOutput(path.join(APP_DIR, "src"), path.join(APP_DIR, "dist"));
}

interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

const running = new Set<ChildProcess>();

function start(
  args: string[],
  cwd = REPO,
): { child: ChildProcess; output: () => Run; done: Promise<Run> } {
  const child = spawn(process.execPath, [MAIN, ...args], {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const output = () => ({ code: child.exitCode, signal: child.signalCode, stdout, stderr });
  const done = new Promise<Run>((resolve) => {
    child.on("close", (code, signal) => {
      running.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, output, done };
}

function lastJsonLine(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1] as string) as Record<string, unknown>;
}

/** Alive = signal 0 succeeds and /proc does not show a zombie. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    // ESRCH: no such process (our own children never answer EPERM).
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    // No /proc (not Linux): signal 0 succeeded, so it is alive.
    return true;
  }
}

beforeAll(() => {
  if (!needsBuild()) return;
  const build = spawnSync(
    "pnpm",
    ["exec", "turbo", "run", "build", "--filter=@sluice/demo...", "--output-logs=errors-only"],
    {
      cwd: REPO,
      encoding: "utf8",
    },
  );
  if (build.status !== 0)
    throw new Error(`building the demo failed:\n${build.stdout}\n${build.stderr}`);
}, 300_000);

afterEach(() => {
  for (const child of running) child.kill("SIGKILL");
});

const tmp = mkdtempSync(path.join(tmpdir(), "sluice-demo-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("demo end to end", () => {
  it.each([
    ["tcp", "@sluice/shuffle-tcp#TcpShuffleServiceFactory"],
    ["ws", "@sluice/shuffle-ws#WsShuffleServiceFactory"],
  ])(
    "verifies the word count over --shuffle %s and prints one JSON line last",
    async (shuffle, factory) => {
      const run = await start(["--shuffle", shuffle, "--records", "60k", "--json"]).done;
      expect(run.stderr).toContain("verified");
      expect(run.code).toBe(0);
      const summary = lastJsonLine(run.stdout);
      expect(summary).toMatchObject({
        verified: true,
        records: 60_000,
        shuffle: factory,
        buffersReturned: true,
      });
      expect(summary.durationMs).toBeGreaterThan(0);
      expect(summary.recordsPerSecond).toBeGreaterThan(0);
      const processes = summary.processes as { role: string; pid: number; peakRssMb: number }[];
      expect(processes.map((p) => p.role)).toEqual(["coordinator", "taskmanager", "taskmanager"]);
      for (const p of processes) {
        expect(p.peakRssMb).toBeGreaterThan(0);
        expect(isAlive(p.pid)).toBe(false);
      }
    },
    60_000,
  );

  it("loads a plugin given as a path outside the workspace, from another working directory", async () => {
    const plugin = path.join(tmp, "my-shuffle.mjs");
    const tcp = pathToFileURL(path.join(REPO, "packages/shuffle-tcp/dist/index.js")).href;
    writeFileSync(
      plugin,
      `export { TcpShuffleServiceFactory as MyShuffle } from ${JSON.stringify(tcp)};\n`,
    );
    const run = await start(
      ["--shuffle", "./my-shuffle.mjs#MyShuffle", "--records", "20k", "--json"],
      tmp,
    ).done;
    expect(run.code).toBe(0);
    expect(lastJsonLine(run.stdout)).toMatchObject({
      verified: true,
      shuffle: "./my-shuffle.mjs#MyShuffle",
    });
  }, 60_000);

  it("fails with the loader's error, naming the key and the value, for an unknown plugin", async () => {
    const run = await start(["--shuffle", "nope", "--records", "1000"]).done;
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('shuffle-service-factory.class = "nope"');
    expect(run.stderr).toContain("SLUICE_ERR_PLUGIN_NOT_FOUND");
    expect(run.stdout).not.toContain("task manager 0");
  }, 30_000);

  it("exits with code 2 and a clear message for a bad option", async () => {
    const run = await start(["--records", "x"]).done;
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      '--records expects a whole number (e.g. 200000, 200_000, 200k or 2m), got "x"',
    );
  }, 30_000);

  it("fails within seconds, naming the task manager, when one is killed, and leaves no process behind", async () => {
    const demo = start(["--records", "200m"]);
    const pids: number[] = [];
    await waitFor(
      () => {
        const out = demo.output().stdout;
        pids.length = 0;
        for (const match of out.matchAll(/task manager (\d) \(pid (\d+)\) ready/g))
          pids[Number(match[1])] = Number(match[2]);
        // Mid-run: both workers up and a progress line showing words flowing.
        return pids.filter(Boolean).length === 2 && /\] [1-9][\d,]*\/200,000,000 words/.test(out);
      },
      { timeoutMs: 30_000, intervalMs: 50, what: "the job to run" },
    );
    const victim = pids[1] as number;
    // Operators recognise workers in `ps` by the word "taskmanager" in their command line.
    expect(readFileSync(`/proc/${victim}/cmdline`, "utf8").split("\0")).toContain("taskmanager");
    const killedAt = Date.now();
    process.kill(victim, "SIGKILL");
    const run = await demo.done;
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `error: the job failed: task manager 1 (pid ${victim}) was killed by signal SIGKILL`,
    );
    expect(run.stderr).toContain("all 2 task manager processes have exited");
    for (const pid of [demo.child.pid as number, ...pids]) expect(isAlive(pid)).toBe(false);
  }, 60_000);
});
