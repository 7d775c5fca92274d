import type { RegisteredTaskManager } from "@sluice/cluster";
import type { JobExecution } from "@sluice/runtime";
import type { JobFailures } from "./job-failures.js";
import type { LocalTaskManager } from "./local-task-managers.js";
import type { Recovery } from "./recovery.js";

/**
 * How the demo's job manager judges the end of a task manager: a loss the job went on without
 * (the task manager ran no task of the job, or the job restarted without it) is survived; any
 * other loss fails the job, and so does a local child that exits when it was not told to, or
 * with another code than it was told.
 */
export class TaskManagerExits {
  /** Lost task managers the job went on without (dropped from the pool, or recovered from). */
  private readonly survived = new Set<RegisteredTaskManager>();
  /** Exit codes the local children should end with, once told to shut down. */
  private readonly expectedExit = new Map<number, number>();
  private readonly failures: JobFailures;
  private readonly stderr: (text: string) => void;

  constructor(failures: JobFailures, stderr: (text: string) => void) {
    this.failures = failures;
    this.stderr = stderr;
  }

  /** The task manager of process `pid` was told to shut down: it should exit with `code`. */
  expectExit(pid: number, code: number): void {
    this.expectedExit.set(pid, code);
  }

  /** Registered task manager `tm` was lost with `cause` while `execution` ran (or before). */
  lost(
    tm: RegisteredTaskManager,
    cause: Error,
    execution: JobExecution | undefined,
    recovery: Recovery | undefined,
  ): void {
    // One that runs no task of the job (it registered and dropped before the job started)
    // only leaves the pool: the job waits for, or runs on, the others.
    if (!execution?.executionVertices.some((v) => v.gateway === tm)) {
      this.stderr(
        `warning: ${cause.message}; it ran no task of the job and is dropped from the pool\n`,
      );
      this.survived.add(tm);
      return;
    }
    // A job that restarts without it (from its latest checkpoint) has not failed.
    if (recovery?.taskManagerLost(tm)) this.survived.add(tm);
    else this.failures.record(1, cause.message);
  }

  /**
   * Local child `child` exited (or could not be started or signalled: `error`); `registered` is
   * its task manager, once it registered.
   */
  localExited(
    child: LocalTaskManager,
    code: number | null,
    signal: NodeJS.Signals | null,
    error: Error | undefined,
    registered: RegisteredTaskManager | undefined,
  ): void {
    if (signal !== null && signal === child.killSignal) return;
    const label = registered?.label ?? `task manager (pid ${child.pid})`;
    if (error !== undefined) {
      this.failures.record(0, `${label} could not be started or signalled: ${error.message}`);
      return;
    }
    // One the job went on without was judged when it was lost: its exit, say on waking from a
    // pause, decides nothing more. The exit of one whose loss failed the job still names how it
    // ended (a signal says more than the closed connection that was noticed first).
    if (registered !== undefined && this.survived.has(registered)) return;
    const expected = this.expectedExit.get(child.pid);
    if (signal !== null) this.failures.record(0, `${label} was killed by signal ${signal}`);
    else if (expected === undefined) {
      // A task manager exits 2 for a bad configuration or plugin: so does the demo.
      this.failures.record(2, `${label} exited unexpectedly with code ${code}`, code === 2 ? 2 : 1);
    } else if (code !== expected && code !== 0) {
      this.failures.record(2, `${label} exited with code ${code} while shutting down`);
    }
  }
}
