import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { deferred } from "@sluice/core";
import { SLUICE_MAIN } from "./cli/distribution.js";

/** How many of a process's last stderr lines its handle keeps. */
const LAST_ERROR_LINES = 20;

/** How a `sluice` process ended. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Where a `sluice` child process's output goes: to this process's, nowhere, or line by line. */
export type LocalProcessOutput =
  | "inherit"
  | "ignore"
  | ((line: string, stream: "stdout" | "stderr", process: SluiceProcess) => void);

/** Options of a {@link SluiceProcess}. */
export interface SluiceProcessOptions {
  /** Where its output goes (default: this process's stdout and stderr). */
  readonly output?: LocalProcessOutput;
  /** Its working directory (default: this process's). */
  readonly cwd?: string;
  /**
   * A command that runs it, with its arguments before the `node` command line (e.g.
   * `["ip", "netns", "exec", "w1"]` to start it in a network namespace). Default: none.
   */
  readonly wrapper?: readonly string[];
}

/**
 * One `sluice <command>` run as a child process of this one (a job manager, a task manager, a
 * shuffle worker, `sluice run`): the handle knows what only a parent knows — its pid from the
 * start, how it exited — and lets a one-host deployment or a test stop, pause or kill it. It runs
 * in its own process group, so that a Ctrl-C in a terminal reaches the parent only, which then
 * stops its children in order.
 */
export class SluiceProcess {
  /** The process id (of the wrapper, when one runs it). */
  readonly pid: number;
  /** The command it runs (`taskmanager`). */
  readonly command: string;
  /** Resolves once the process exited (also when it could not be started: code and signal null). */
  readonly exited: Promise<ProcessExit>;
  /** Whether the process has exited. */
  hasExited = false;
  /** The signal it was last sent by {@link kill}, if any: its exit is then expected. */
  killedWith: NodeJS.Signals | undefined;

  private readonly child: ChildProcess;
  /** Its last lines on stderr, for the message when it exits unexpectedly. */
  private readonly lastErrors: string[] = [];

  /**
   * Spawns `node <sluice> <command> ...args`.
   *
   * @param command - the `sluice` command (`jobmanager`, `taskmanager`, `shuffleworker`, `run`, ...).
   */
  constructor(command: string, args: readonly string[], options: SluiceProcessOptions = {}) {
    const output = options.output ?? "inherit";
    const piped = typeof output === "function";
    const commandLine = [
      ...(options.wrapper ?? []),
      process.execPath,
      ...childExecArgv(),
      SLUICE_MAIN,
      command,
      ...args,
    ];
    this.command = command;
    this.child = spawn(commandLine[0] as string, commandLine.slice(1), {
      // stderr is always read: its last lines explain an early exit.
      stdio: ["ignore", piped ? "pipe" : output, "pipe"],
      detached: true,
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
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
    // After its output was read to the end: a line printed just before the exit is not lost.
    this.child.on("close", (code, signal) => exited(code, signal));
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
