import { setTimeout as sleep } from "node:timers/promises";

/** The longest a paced task sleeps at once, so a lifted throttle takes effect quickly. */
const MAX_SLEEP_MS = 100;

/**
 * How far a task may fall behind its schedule (held back by back-pressure, or a busy machine)
 * before the schedule restarts instead of letting it burst to catch up.
 */
export const MAX_LAG_MS = 250;

/**
 * Keeps a task at or below a rate: after each batch the task reports how many records it handled,
 * and {@link pace} sleeps until that many records are due at the rate. The schedule restarts when
 * the rate changes, so a new rate applies from that moment on, and when the task fell more than
 * {@link MAX_LAG_MS} behind it: a rate is a limit, never made up for later (a source that was
 * back-pressured goes on at its rate, so lifting a throttle downstream ends the back-pressure).
 */
export class RatePacer {
  private startMs = 0;
  private records = 0;
  private rate: number | undefined;

  /**
   * @param rateOf the current limit in records per second (`undefined`: no limit); read before
   *   every batch, so it may change while the task runs.
   * @param now the clock, in milliseconds.
   */
  constructor(
    private readonly rateOf: () => number | undefined,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How many records the next batch may hold: about 1/20 s worth, at most `max`. */
  batchSize(max: number): number {
    const rate = this.rateOf();
    return rate === undefined ? max : Math.max(1, Math.min(max, Math.ceil(rate / 20)));
  }

  /** `handled` more records were processed: waits until they are due at the current rate. */
  async pace(handled: number, signal?: AbortSignal): Promise<void> {
    const rate = this.rateOf();
    const now = this.now();
    if (rate !== this.rate) {
      this.rate = rate;
      this.startMs = now;
      this.records = 0;
    }
    if (rate === undefined) return;
    this.records += handled;
    const dueMs = this.startMs + (this.records / rate) * 1000;
    if (now - dueMs > MAX_LAG_MS) {
      this.startMs = now;
      this.records = 0;
      return;
    }
    if (dueMs > now) {
      await sleep(Math.min(dueMs - now, MAX_SLEEP_MS), undefined, signal ? { signal } : {});
      if (dueMs - now > MAX_SLEEP_MS) await this.pace(0, signal);
    }
  }
}

/**
 * The counters' throttle in one task manager (`--throttle`, and `POST /throttle` on the
 * dashboard): records per second each count subtask reads at most, or `undefined` for no limit.
 * The job manager sets it on every task manager over the control plane's application channel.
 */
export class Throttle {
  private limit: number | undefined;

  /** The current limit per count subtask, in records per second (`undefined`: none). */
  get recordsPerSecond(): number | undefined {
    return this.limit;
  }

  /** Sets (a positive number) or lifts (`undefined`) the limit. */
  set(recordsPerSecond: number | undefined): void {
    this.limit = recordsPerSecond;
  }
}
