/**
 * Why a demo job failed, and how the failure is reported: every cause is recorded once with a
 * rank, the first one aborts what the job manager is waiting for, and the report names the root
 * cause first and its consequences after it.
 */

/**
 * One reason the job failed. `rank` orders the report: the root cause (a task manager killed by
 * a signal, one that was lost) comes before its consequences (tasks failing because a peer
 * vanished).
 */
export interface Failure {
  readonly rank: number;
  readonly message: string;
  /** The exit code the demo ends with when this failure is the root cause. */
  readonly exitCode: number;
}

/** Thrown out of a wait of the job manager once the job failed: the failures say why. */
export class JobFailedError extends Error {
  constructor() {
    super("job failed");
  }
}

/**
 * Awaits `promise` until `signal` aborts: then rejects with the signal's reason. The abort
 * listener is removed however it ends, since the signals outlive the waits (a
 * `AbortSignal.timeout` cannot be cleared).
 */
export async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort as () => void);
  }
}

/** True if `promise` settles (either way) within `ms`. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const settled = promise.then(
    () => true,
    () => true,
  );
  try {
    return await untilAborted(settled, AbortSignal.timeout(ms));
  } catch {
    return false;
  }
}

/** The failures of one job: recorded once each, ordered by rank. */
export class JobFailures {
  private readonly failures: Failure[] = [];
  private readonly controller = new AbortController();

  /** Aborted (with a JobFailedError) when the first failure is recorded. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Records a failure; the same message twice counts once. */
  record(rank: number, message: string, exitCode = 1): void {
    if (this.failures.some((f) => f.message === message)) return;
    this.failures.push({ rank, message, exitCode });
    if (this.failures.length === 1) this.controller.abort(new JobFailedError());
  }

  /** The failures recorded so far, root cause first. */
  byRank(): Failure[] {
    return [...this.failures].sort((a, b) => a.rank - b.rank);
  }

  /**
   * Awaits `promise`, failing fast (with a JobFailedError) when the job fails, and after
   * `timeout.ms` if given: a timeout is itself a failure, naming what was awaited.
   */
  async phase<T>(promise: Promise<T>, timeout?: { ms: number; what: string }): Promise<T> {
    const deadline = timeout === undefined ? undefined : AbortSignal.timeout(timeout.ms);
    const signal = deadline === undefined ? this.signal : AbortSignal.any([this.signal, deadline]);
    try {
      return await untilAborted(promise, signal);
    } catch (error) {
      if (timeout !== undefined && deadline?.aborted === true && error === deadline.reason) {
        this.record(2, `timed out after ${timeout.ms / 1000} s waiting for ${timeout.what}`);
        throw new JobFailedError();
      }
      throw error;
    }
  }
}

/** What the end of a failed run knows about the task managers it stopped. */
export type StoppedTaskManagers =
  | {
      /** The one-command demo's children: which of them are still alive. */
      readonly local: readonly { readonly pid: number; readonly exited: boolean }[];
    }
  | {
      /** A standalone job manager: how many registered, shut down on request, were lost. */
      readonly registered: number;
      readonly stopped: number;
      readonly lost: number;
    };

/**
 * The lines on stderr of a failed run: the root cause, the other failures, and what became of
 * the task managers.
 */
export function failureLines(
  [root, ...others]: readonly [Failure, ...Failure[]],
  taskManagers: StoppedTaskManagers,
): string[] {
  const lines = [
    `error: the job failed: ${root.message}`,
    ...others.map((f) => `  also: ${f.message}`),
  ];
  if ("local" in taskManagers) {
    const alive = taskManagers.local.filter((p) => !p.exited);
    lines.push(
      alive.length === 0
        ? `all ${taskManagers.local.length} task manager processes have exited`
        : `could not stop task managers with pids ${alive.map((p) => p.pid).join(", ")}`,
    );
  } else {
    lines.push(
      `${taskManagers.stopped} of ${taskManagers.registered} registered task managers shut down on request; ${taskManagers.lost} were lost`,
    );
  }
  return lines;
}
