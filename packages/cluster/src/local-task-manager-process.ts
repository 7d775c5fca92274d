import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { deferred } from "@sluice/core";
import type { RegisteredTaskManager } from "./registered-task-manager.js";

/** How many of a process's last stderr lines its handle keeps. */
const LAST_ERROR_LINES = 20;

/** How a task manager process ended. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Where a local task manager's output goes: to this process's, nowhere, or line by line. */
export type LocalProcessOutput =
  | "inherit"
  | "ignore"
  | ((line: string, stream: "stdout" | "stderr", process: LocalTaskManagerProcess) => void);

/**
 * One `sluice taskmanager` child process of a {@link LocalCluster}: an ordinary task manager that
 * registers over the control plane as a remote one does. The handle adds what only a parent
 * knows (its pid from the start, how it exited) and lets a test or a one-host deployment stop,
 * pause or kill it.
 */
export class LocalTaskManagerProcess {
  /** The process id. */
  readonly pid: number;
  /** Resolves once the process exited (also when it could not be started: code and signal null). */
  readonly exited: Promise<ProcessExit>;
  /** Whether the process has exited. */
  hasExited = false;
  /** The signal it was last sent by {@link kill}, if any: its exit is then expected. */
  killedWith: NodeJS.Signals | undefined;
  /** Its registration with the job manager, once it registered. */
  registered: RegisteredTaskManager | undefined;

  private readonly child: ChildProcess;
  /** Its last lines on stderr, for the message when it exits unexpectedly. */
  private readonly lastErrors: string[] = [];

  /**
   * Spawns `node <sluice> taskmanager ...args`.
   *
   * @param main - the `sluice` entry point (this package's `dist/cli/main.js`).
   */
  constructor(main: string, args: readonly string[], output: LocalProcessOutput) {
    const piped = typeof output === "function";
    this.child = spawn(process.execPath, [...childExecArgv(), main, "taskmanager", ...args], {
      // stderr is always read: its last lines explain an exit before registration.
      stdio: ["ignore", piped ? "pipe" : output, "pipe"],
      // Its own process group: a Ctrl-C in a terminal reaches the parent only, which then shuts
      // the task managers down in order.
      detached: true,
    });
    this.pid = this.child.pid ?? -1;
    if (piped && this.child.stdout !== null) {
      createInterface({ input: this.child.stdout }).on("line", (line) =>
        output(line, "stdout", this),
      );
    }
    if (this.child.stderr !== null) {
      createInterface({ input: this.child.stderr }).on("line", (line) => {
        this.lastErrors.push(line);
        if (this.lastErrors.length > LAST_ERROR_LINES) this.lastErrors.shift();
        if (piped) output(line, "stderr", this);
        else if (output === "inherit") process.stderr.write(`${line}\n`);
      });
    }
    const exit = deferred<ProcessExit>();
    const exited = (code: number | null, signal: NodeJS.Signals | null) => {
      if (this.hasExited) return;
      this.hasExited = true;
      exit.resolve({ code, signal });
    };
    this.child.on("error", () => exited(null, null));
    this.child.on("exit", (code, signal) => exited(code, signal));
    this.exited = exit.promise;
  }

  /** Its last lines on stderr (at most 20), oldest first. */
  get stderrTail(): readonly string[] {
    return [...this.lastErrors];
  }

  /** Sends `signal` (default SIGKILL); nothing when the process has exited. */
  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.hasExited) return;
    this.killedWith = signal;
    this.child.kill(signal);
  }
}

/**
 * The parent's Node options a child keeps (a profiler's, say), without a debugger port (it cannot
 * be shared) and without export conditions (a parent under a TypeScript test runner resolves the
 * packages to their sources, which a plain Node child cannot load).
 */
function childExecArgv(): string[] {
  const kept: string[] = [];
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg.startsWith("--inspect")) continue;
    if (arg === "--conditions" || arg === "-C") {
      i++;
      continue;
    }
    if (arg.startsWith("--conditions=") || (arg.startsWith("-C") && arg.length > 2)) continue;
    kept.push(arg);
  }
  return kept;
}
