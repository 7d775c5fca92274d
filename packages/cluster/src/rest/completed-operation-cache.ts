/**
 * What an asynchronous operation of the REST endpoint came to (Flink's `OperationResult`):
 * still running, done with a result, or failed.
 */
export type OperationResult<R> =
  | { readonly status: "IN_PROGRESS" }
  | { readonly status: "SUCCESS"; readonly result: R }
  | { readonly status: "FAILURE"; readonly error: Error };

interface Entry<R> {
  outcome: OperationResult<R>;
  /** When (performance.now()) a completed outcome is dropped. */
  expiresAt: number;
}

/**
 * The asynchronous operations of the REST endpoint by trigger id (Flink's
 * `CompletedOperationCache`): a savepoint or stop-with-savepoint is triggered by one request and
 * its outcome polled by later ones. A completed operation's outcome is kept for
 * `rest.async.store-duration`, then forgotten; an operation still running is kept until it
 * completes. Expired entries are dropped whenever the cache is used, so it holds no timer.
 */
export class CompletedOperationCache<R> {
  private readonly entries = new Map<string, Entry<R>>();

  constructor(
    /** `rest.async.store-duration`: how long a completed outcome stays. */
    private readonly storeDurationMs: number,
  ) {}

  /**
   * Registers the operation `key` runs. When `key` is registered already (a client retried its
   * request with the same trigger id), the earlier operation stands and `start` is not called:
   * returns false (Flink's idempotent savepoint triggers).
   */
  register(key: string, start: () => Promise<R>): boolean {
    this.expire();
    if (this.entries.has(key)) return false;
    const entry: Entry<R> = {
      outcome: { status: "IN_PROGRESS" },
      expiresAt: Number.POSITIVE_INFINITY,
    };
    this.entries.set(key, entry);
    const done = (outcome: OperationResult<R>) => {
      entry.outcome = outcome;
      entry.expiresAt = performance.now() + this.storeDurationMs;
    };
    let running: Promise<R>;
    try {
      running = start();
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      (result) => done({ status: "SUCCESS", result }),
      (error: unknown) =>
        done({
          status: "FAILURE",
          error: error instanceof Error ? error : new Error(String(error)),
        }),
    );
    return true;
  }

  /** The outcome of operation `key`, or `undefined` when it is unknown or expired. */
  get(key: string): OperationResult<R> | undefined {
    this.expire();
    return this.entries.get(key)?.outcome;
  }

  /** How many operations are kept (running and completed). */
  get size(): number {
    this.expire();
    return this.entries.size;
  }

  private expire(): void {
    const now = performance.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) this.entries.delete(key);
    }
  }
}
