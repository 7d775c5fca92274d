import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterEach } from "vitest";

/** How a process ended, with everything it printed. */
export interface ProcessRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A process a test started, its output kept as it comes. */
export interface TrackedProcess {
  readonly child: ChildProcess;
  /** What it printed so far, and its exit status once it ended. */
  output(): ProcessRun;
  /** Resolves once it ended and its output was read to the end. */
  readonly done: Promise<ProcessRun>;
}

const running = new Set<ChildProcess>();

/**
 * Starts `command` (its first element the program), keeping its stdout and stderr; `prefix` runs
 * it through another command first (e.g. `ip netns exec <ns>`). {@link killTrackedProcesses}
 * kills it if a test leaves it running.
 */
export function startProcess(
  command: readonly string[],
  options: { readonly cwd?: string; readonly prefix?: readonly string[] } = {},
): TrackedProcess {
  const line = [...(options.prefix ?? []), ...command];
  const child = spawn(line[0] as string, line.slice(1), {
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
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
  const done = new Promise<ProcessRun>((resolve) => {
    child.on("close", (code, signal) => {
      running.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, output, done };
}

/** SIGKILLs every tracked process still running (for an `afterEach`). */
export function killTrackedProcesses(): void {
  for (const child of running) child.kill("SIGKILL");
}

/** The hook of a test file that starts processes: none outlives its test. */
export function useTrackedProcesses(): void {
  afterEach(killTrackedProcesses);
}

/** The last line of `stdout` as JSON (a `--json` summary). */
export function lastJsonLine(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1] as string) as Record<string, unknown>;
}

/** Alive: signal 0 succeeds and /proc does not show a zombie. */
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
