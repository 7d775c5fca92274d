import { IllegalArgumentError, TimeoutError } from "../errors.js";

/** Options of {@link waitFor}. */
export interface WaitForOptions {
  /** What the condition means, for the timeout message ("both connections closed"). */
  readonly what: string;
  /** Give up after this many milliseconds (default 5000). */
  readonly timeoutMs?: number;
  /** Milliseconds between two checks (default 5). */
  readonly intervalMs?: number;
}

/**
 * Polls `condition` until it returns true, instead of sleeping a fixed time and hoping: resolves
 * as soon as the condition holds (checked once right away), rejects with a `TimeoutError` naming
 * `what` when it still does not after `timeoutMs`. An error thrown by the condition rejects at
 * once; it is never retried away. Uses real timers: do not call it while `vi.useFakeTimers()`
 * fakes `setTimeout`.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: WaitForOptions,
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const intervalMs = options.intervalMs ?? 5;
  if (!(timeoutMs >= 0) || !(intervalMs > 0)) {
    throw new IllegalArgumentError(
      `waitFor needs timeoutMs >= 0 and intervalMs > 0, got ${timeoutMs} and ${intervalMs}`,
    );
  }
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (performance.now() >= deadline) {
      throw new TimeoutError(`timed out after ${timeoutMs} ms waiting for ${options.what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
