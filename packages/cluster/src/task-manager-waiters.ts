import { IllegalStateError, TimeoutError } from "@sluice/core";
import type { RegisteredTaskManager } from "./registered-task-manager.js";

interface Waiter {
  /** How many connected task managers it waits for, besides those in `excluded`. */
  readonly count: number;
  /** Task managers that do not count (a placement's current ones, when it waits for a new one). */
  readonly excluded?: ReadonlySet<RegisteredTaskManager>;
  readonly resolve: (taskManagers: readonly RegisteredTaskManager[]) => void;
  readonly reject: (error: Error) => void;
}

/**
 * The waits of a job manager for task managers to register (a deployment's, or a restart's for a
 * replacement): each resolves once enough connected task managers are there, or times out.
 */
export class TaskManagerWaiters {
  private readonly waiters = new Set<Waiter>();
  private readonly connected: () => readonly RegisteredTaskManager[];
  private closed = false;

  /** @param connected - the connected task managers, in registration order. */
  constructor(connected: () => readonly RegisteredTaskManager[]) {
    this.connected = connected;
  }

  /**
   * The first `count` connected task managers not in `excluded`, once there are that many.
   *
   * @throws TimeoutError with `timeoutMessage()` after `timeoutMs` (no timeout when undefined);
   *   IllegalStateError when closed first.
   */
  waitFor(
    count: number,
    timeoutMs: number | undefined,
    excluded: ReadonlySet<RegisteredTaskManager> | undefined,
    timeoutMessage: () => string,
  ): Promise<readonly RegisteredTaskManager[]> {
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(new IllegalStateError("the job manager is closed"));
        return;
      }
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = {
        count,
        ...(excluded === undefined ? {} : { excluded }),
        resolve: (taskManagers) => {
          clearTimeout(timer);
          resolve(taskManagers);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          this.waiters.delete(waiter);
          reject(new TimeoutError(timeoutMessage()));
        }, timeoutMs);
      }
      this.waiters.add(waiter);
      this.wake();
    });
  }

  /** Resolves every wait that enough connected task managers are there for now. */
  wake(): void {
    const connected = this.connected();
    for (const waiter of this.waiters) {
      const { excluded } = waiter;
      const candidates =
        excluded === undefined ? connected : connected.filter((tm) => !excluded.has(tm));
      if (candidates.length < waiter.count) continue;
      this.waiters.delete(waiter);
      waiter.resolve(candidates.slice(0, waiter.count));
    }
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
