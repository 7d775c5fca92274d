import { IllegalStateError, TimeoutError } from "@sluice/core";
import { formatDuration } from "@sluice/runtime-api";
import type { RegisteredTaskManager } from "./registered-task-manager.js";

/**
 * A wait of the job manager for task managers to register: a deployment's, or a restart's for
 * a replacement of a lost one. What an application shows while a job cannot run.
 */
export interface TaskManagerWait {
  /**
   * What it waits for: `2 task managers to register`, or `a task manager to replace the lost
   * task manager 1 (pid 4242) at 10.0.0.3, which ran Count (2/2)`.
   */
  readonly what: string;
  /** When it began, in ms since the epoch. */
  readonly since: number;
  /** How long it waits at most (`slot.request.timeout` unless its caller chose another). */
  readonly timeoutMs: number | undefined;
  /** The key that set {@link TaskManagerWait.timeoutMs}, when one did (`slot.request.timeout`). */
  readonly timeoutKey: string | undefined;
}

/**
 * How a wait went: it began, task managers came, its time ran out, or it was abandoned (its job
 * was canceled, or the job manager lost its leadership, before task managers came).
 */
export type TaskManagerWaitPhase = "began" | "satisfied" | "timed-out" | "abandoned";

/**
 * One line about a wait for task managers, for logs and progress lines: `waiting 12 s of 5 min
 * (slot.request.timeout) for a task manager to replace …` while it waits (`phase` undefined),
 * and how it began or ended otherwise.
 */
export function describeTaskManagerWait(
  wait: TaskManagerWait,
  phase?: TaskManagerWaitPhase,
  now: number = Date.now(),
): string {
  const limit =
    wait.timeoutMs === undefined
      ? ""
      : ` ${formatDuration(wait.timeoutMs)}${wait.timeoutKey === undefined ? "" : ` (${wait.timeoutKey})`}`;
  const elapsed = `${Math.round((now - wait.since) / 1_000)} s`;
  switch (phase) {
    case "began":
      return `waiting${limit === "" ? "" : ` up to${limit}`} for ${wait.what}`;
    case "satisfied":
      return `done waiting for ${wait.what} after ${elapsed}`;
    case "timed-out":
      return `gave up waiting for ${wait.what} after${limit}`;
    case "abandoned":
      return `stopped waiting for ${wait.what} after ${elapsed}`;
    default:
      return `waiting ${elapsed}${limit === "" ? "" : ` of${limit}`} for ${wait.what}`;
  }
}

interface Waiter {
  readonly wait: TaskManagerWait;
  /** How many connected task managers it waits for, besides those in `excluded`. */
  readonly count: number;
  /** Task managers that do not count (a placement's current ones, when it waits for a new one). */
  readonly excluded?: ReadonlySet<RegisteredTaskManager>;
  readonly resolve: (taskManagers: readonly RegisteredTaskManager[]) => void;
  readonly reject: (error: Error) => void;
  /** Whether `onWait` was told it began (one satisfied at once never waited). */
  began: boolean;
}

/**
 * The waits of a job manager for task managers to register (a deployment's, or a restart's for a
 * replacement): each resolves once enough connected task managers are there, or times out. The
 * pending ones say what they wait for, and `onWait` hears when each begins and how it ended.
 */
export class TaskManagerWaiters {
  private readonly waiters = new Set<Waiter>();
  private readonly connected: () => readonly RegisteredTaskManager[];
  private readonly onWait: (wait: TaskManagerWait, phase: TaskManagerWaitPhase) => void;
  private closed = false;

  /**
   * @param connected - the connected task managers, in registration order.
   * @param onWait - told when a wait begins and how it ended; must not throw.
   */
  constructor(
    connected: () => readonly RegisteredTaskManager[],
    onWait: (wait: TaskManagerWait, phase: TaskManagerWaitPhase) => void = () => {},
  ) {
    this.connected = connected;
    this.onWait = onWait;
  }

  /** The waits not ended yet, oldest first. */
  get pending(): readonly TaskManagerWait[] {
    return [...this.waiters].map((waiter) => waiter.wait);
  }

  /**
   * The first `count` connected task managers not in `excluded`, once there are that many.
   *
   * @param timeout - how long at most, and the key that says so (none: no timeout).
   * @param what - what it waits for, as {@link TaskManagerWait.what} says it.
   * @param signal - abandons the wait (its job no longer needs the task managers).
   * @throws TimeoutError with `timeoutMessage()` after the timeout;
   *   IllegalStateError when closed first; `signal`'s reason when it aborts first.
   */
  waitFor(
    count: number,
    timeout: { readonly ms: number; readonly key?: string } | undefined,
    excluded: ReadonlySet<RegisteredTaskManager> | undefined,
    what: string,
    timeoutMessage: () => string,
    signal?: AbortSignal,
  ): Promise<readonly RegisteredTaskManager[]> {
    const timeoutMs = timeout?.ms;
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(new IllegalStateError("the job manager is closed"));
        return;
      }
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      let timer: NodeJS.Timeout | undefined;
      const abandon = () => {
        if (!this.waiters.delete(waiter)) return;
        clearTimeout(timer);
        if (waiter.began) this.onWait(wait, "abandoned");
        reject(signal?.reason);
      };
      const wait: TaskManagerWait = {
        what,
        since: Date.now(),
        timeoutMs,
        timeoutKey: timeout?.key,
      };
      const waiter: Waiter = {
        wait,
        count,
        ...(excluded === undefined ? {} : { excluded }),
        resolve: (taskManagers) => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", abandon);
          resolve(taskManagers);
        },
        reject: (error) => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", abandon);
          reject(error);
        },
        began: false,
      };
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          this.waiters.delete(waiter);
          signal?.removeEventListener("abort", abandon);
          this.onWait(wait, "timed-out");
          reject(new TimeoutError(timeoutMessage()));
        }, timeoutMs);
      }
      signal?.addEventListener("abort", abandon, { once: true });
      this.waiters.add(waiter);
      if (!this.satisfy(waiter, this.connected())) {
        waiter.began = true;
        this.onWait(wait, "began");
      }
    });
  }

  /** Resolves every wait that enough connected task managers are there for now. */
  wake(): void {
    const connected = this.connected();
    for (const waiter of this.waiters) this.satisfy(waiter, connected);
  }

  /** Resolves `waiter` when enough of `connected` count for it; true when it did. */
  private satisfy(waiter: Waiter, connected: readonly RegisteredTaskManager[]): boolean {
    const { excluded } = waiter;
    const candidates =
      excluded === undefined ? connected : connected.filter((tm) => !excluded.has(tm));
    if (candidates.length < waiter.count) return false;
    this.waiters.delete(waiter);
    waiter.resolve(candidates.slice(0, waiter.count));
    if (waiter.began) this.onWait(waiter.wait, "satisfied");
    return true;
  }

  /** Rejects every wait (the job manager closed) and any later one. */
  close(): void {
    this.closed = true;
    for (const waiter of this.waiters) {
      waiter.reject(new IllegalStateError("the job manager closed"));
    }
    this.waiters.clear();
  }
}
