/**
 * Runs the compiled demo (`node apps/demo/dist/main.js ...`) as an operator would, for the
 * end-to-end tests. Child processes run compiled JavaScript, so the demo (and the packages it
 * uses) is built first when dist/ is missing or older than the sources.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll } from "vitest";

export const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const REPO = path.resolve(APP_DIR, "../..");
export const MAIN = path.join(APP_DIR, "dist/main.js");
/** The workspace packages the demo imports, by folder: each must have been built. */
const WORKSPACE_DEPS = [
  "packages/core",
  "packages/runtime-api",
  "packages/runtime",
  "packages/network",
  "packages/cluster",
  "packages/metrics-prometheus",
  "packages/shuffle-tcp",
  "packages/shuffle-ws",
  "apps/corpus",
];
/** Folders of test code only, which the build leaves out. */
const TEST_ONLY = new Set(["test-support", "chaos"].map((name) => path.join(APP_DIR, "src", name)));

/** True when some source file of `src` has no compiled counterpart in `dist` at least as new. */
function staleOutput(src: string, dist: string): boolean {
  for (const entry of readdirSync(src, { withFileTypes: true })) {
    const file = path.join(src, entry.name);
    if (TEST_ONLY.has(file)) continue;
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
  if (WORKSPACE_DEPS.some((dep) => !existsSync(path.join(REPO, dep, "dist/index.js")))) return true;
  return staleOutput(path.join(APP_DIR, "src"), path.join(APP_DIR, "dist"));
}

/** Builds the demo and what it uses, if its dist/ is stale (for a `beforeAll`). */
export function buildDemoIfStale(): void {
  if (!needsBuild()) return;
  const build = spawnSync(
    "pnpm",
    ["exec", "turbo", "run", "build", "--filter=@sluice/demo...", "--output-logs=errors-only"],
    { cwd: REPO, encoding: "utf8" },
  );
  if (build.status !== 0)
    throw new Error(`building the demo failed:\n${build.stdout}\n${build.stderr}`);
}

/** How a demo process ended, with everything it printed. */
/** Demo arguments for up to two restarts, 100 ms apart: enough for every recovery the e2e tests force. */
export const TWO_RESTARTS: readonly string[] = [
  "-D",
  "restart-strategy.type=fixed-delay",
  "-D",
  "restart-strategy.fixed-delay.attempts=2",
  "-D",
  "restart-strategy.fixed-delay.delay=100ms",
];

export interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running demo process. */
export interface DemoProcess {
  readonly child: ChildProcess;
  /** What it printed so far, and its exit status once it ended. */
  output(): Run;
  readonly done: Promise<Run>;
}

const running = new Set<ChildProcess>();

/**
 * Starts `node <command...> main.js <args>`; `prefix` runs it through another command first
 * (e.g. `ip netns exec <ns>`).
 */
export function startDemo(
  args: readonly string[],
  options: { cwd?: string; prefix?: readonly string[] } = {},
): DemoProcess {
  const prefix = options.prefix ?? [];
  const command = [...prefix, process.execPath, MAIN, ...args];
  const child = spawn(command[0] as string, command.slice(1), {
    cwd: options.cwd ?? REPO,
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

/**
 * The hooks of a test file that starts the demo: build it first if stale, and kill what a test
 * left running after each test.
 */
export function useDemoProcesses(): void {
  beforeAll(buildDemoIfStale, 300_000);
  afterEach(killDemoProcesses);
}

/** Kills every demo process still running (for an `afterEach`). */
export function killDemoProcesses(): void {
  for (const child of running) child.kill("SIGKILL");
}

export function lastJsonLine(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1] as string) as Record<string, unknown>;
}

/** Alive = signal 0 succeeds and /proc does not show a zombie. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return true;
  }
}

/** Polls `condition` every 50 ms until it holds; fails after `timeoutMs`. */
export async function until(
  condition: () => boolean,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
