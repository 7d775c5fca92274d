/**
 * Availability in the style of Flink's `AvailabilityProvider`: instead of blocking a thread, a
 * component says whether it can make progress now (`isAvailable()`) and hands out one shared
 * promise that resolves when it can. Callers on the hot path check the boolean synchronously and
 * only await when it is false, so steady state creates no promise per record.
 */
export interface AvailabilityProvider {
  /** True when the next call (request, emit, poll) can make progress now. */
  isAvailable(): boolean;
  /**
   * A promise that is already resolved while available, and otherwise resolves when this becomes
   * available (or is destroyed/released, so waiters wake up and observe the terminal state).
   * Every caller gets the same promise until it resolves; it never rejects.
   */
  getAvailableFuture(): Promise<void>;
}

/** The shared, already-resolved "available" promise. */
export const AVAILABLE: Promise<void> = Promise.resolve();

/**
 * Holds the current availability promise of one component (Flink's AvailabilityHelper).
 * Starts available.
 */
export class AvailabilityHelper implements AvailabilityProvider {
  private future: Promise<void> = AVAILABLE;
  private resolveFuture: (() => void) | undefined;

  isAvailable(): boolean {
    return this.resolveFuture === undefined;
  }

  getAvailableFuture(): Promise<void> {
    return this.future;
  }

  /** Marks the component unavailable; a no-op when already unavailable (the promise is kept). */
  resetUnavailable(): void {
    if (this.resolveFuture !== undefined) return;
    this.future = new Promise<void>((resolve) => {
      this.resolveFuture = resolve;
    });
  }

  /** Marks the component available and wakes every waiter; a no-op when already available. */
  resetAvailable(): void {
    const resolve = this.resolveFuture;
    if (resolve === undefined) return;
    this.resolveFuture = undefined;
    this.future = AVAILABLE;
    resolve();
  }
}

/**
 * Combines availability futures: resolves when any of them resolves (Flink's `anyOf`), used by a
 * gate that waits for whichever channel gets data first.
 */
export function anyOf(futures: readonly Promise<void>[]): Promise<void> {
  if (futures.length === 0) return AVAILABLE;
  return Promise.race(futures);
}

/** Resolves when all futures resolved (Flink's `and`), used by writers with several outputs. */
export function allOf(futures: readonly Promise<void>[]): Promise<void> {
  if (futures.length === 0) return AVAILABLE;
  return Promise.all(futures).then(() => undefined);
}
