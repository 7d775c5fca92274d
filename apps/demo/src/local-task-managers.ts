import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { deferred } from "@sluice/core";

/**
 * How long a local task manager tries to register again after losing its job manager (instead of
 * the 5 min default): long enough for a connection that dropped, short enough that no child
 * outlives a job manager that was killed.
 */
const LOCAL_REGISTRATION_TIMEOUT = "10s";

/** One task-manager child process of the one-command demo. */
export interface LocalTaskManager {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Set when the launcher killed it: its exit is then expected. */
  killSignal: NodeJS.Signals | undefined;
  exited: boolean;
  /** Resolves when the process exited. */
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * The task managers of the one-command demo: `main.js taskmanager --jobmanager 127.0.0.1:<port>`
 * child processes with this process's configuration arguments. They are ordinary task managers
 * that connect over the control plane like remote ones; the launcher only adds what a parent
 * knows and a remote job manager cannot: how a child exited (a signal, an exit code).
 */
export class LocalTaskManagers {
  readonly processes: LocalTaskManager[] = [];

  private constructor(
    private readonly main: string,
    private readonly jobManager: { host: string; port: number } | undefined,
    private readonly configArgs: readonly string[],
    private readonly onExit: (
      process: LocalTaskManager,
      code: number | null,
      signal: NodeJS.Signals | null,
      error?: Error,
    ) => void,
  ) {}

  /**
   * Starts `count` task managers that connect to `jobManager`; with `undefined`, to the leader
   * that leader retrieval finds (high availability: the configuration arguments say where).
   *
   * @param configArgs this process's `--config`, `-D` and `--shuffle` arguments: the children run
   *   on the same host, so they share its host-local configuration (certificates, addresses).
   * @param onExit called once per child when it exits (with `error` when it could not start).
   */
  static start(
    count: number,
    jobManager: { host: string; port: number } | undefined,
    configArgs: readonly string[],
    onExit: (
      process: LocalTaskManager,
      code: number | null,
      signal: NodeJS.Signals | null,
      error?: Error,
    ) => void,
  ): LocalTaskManagers {
    const main = fileURLToPath(new URL("./main.js", import.meta.url));
    if (!existsSync(main)) {
      throw new Error(`cannot start task managers: ${main} does not exist (build the demo first)`);
    }
    const launcher = new LocalTaskManagers(main, jobManager, configArgs, onExit);
    for (let i = 0; i < count; i++) launcher.startOne();
    return launcher;
  }

  /**
   * Starts one more task manager like the others (e.g. to replace one that was lost: it
   * registers, and a restarting job's lost subtasks go to it).
   */
  startOne(): LocalTaskManager {
    const child = spawn(
      process.execPath,
      [
        // A debugger port cannot be shared with the job manager.
        ...process.execArgv.filter((arg) => !arg.startsWith("--inspect")),
        this.main,
        "taskmanager",
        ...(this.jobManager === undefined
          ? []
          : ["--jobmanager", `${this.jobManager.host}:${this.jobManager.port}`]),
        "--quiet",
        // Its job manager is its parent: once that is gone, nothing comes back to register with.
        "-D",
        `taskmanager.registration.timeout=${LOCAL_REGISTRATION_TIMEOUT}`,
        ...this.configArgs,
      ],
      {
        stdio: ["ignore", "inherit", "inherit"],
        // Its own process group: Ctrl-C reaches the job manager only, which ends the job.
        detached: true,
      },
    );
    const exit = deferred<{ code: number | null; signal: NodeJS.Signals | null }>();
    const handle: LocalTaskManager = {
      child,
      pid: child.pid ?? -1,
      killSignal: undefined,
      exited: false,
      exit: exit.promise,
    };
    const exited = (code: number | null, signal: NodeJS.Signals | null, error?: Error) => {
      if (handle.exited) return;
      handle.exited = true;
      exit.resolve({ code, signal });
      this.onExit(handle, code, signal, error);
    };
    // The process could not be started (or signalled): it counts as exited, with the reason.
    child.on("error", (error) => exited(null, null, error));
    child.on("exit", (code, signal) => exited(code, signal));
    this.processes.push(handle);
    return handle;
  }

  /** Sends `signal` to one child; its exit is then expected (see `killSignal`). */
  kill(handle: LocalTaskManager, signal: NodeJS.Signals): void {
    if (handle.exited) return;
    handle.killSignal = signal;
    handle.child.kill(signal);
  }

  /** Resolves once every child exited. */
  allExited(): Promise<void> {
    return Promise.all(this.processes.map((p) => p.exit)).then(() => undefined);
  }

  /** Sends `signal` to every child still running. */
  killAll(signal: NodeJS.Signals): void {
    for (const handle of this.processes) this.kill(handle, signal);
  }

  /** The child with this pid. */
  byPid(pid: number): LocalTaskManager | undefined {
    return this.processes.find((p) => p.pid === pid);
  }
}
