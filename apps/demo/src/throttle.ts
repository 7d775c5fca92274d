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
 * The counters' throttles in one task manager process, by job: the job message `throttle` (the
 * dashboard's form, or `POST /jobs/:jobid/messages/throttle`) sets or lifts the limit of the job's
 * count subtasks here, over the one their job graph started them with (`--throttle`). A job's
 * entry goes once none of its count subtasks runs here any more.
 */
export class JobThrottles {
  /** The limit each job's message set: a rate, or `null` for none. */
  private readonly set = new Map<string, number | null>();
  /** How many count subtasks of each job run here. */
  private readonly running = new Map<string, number>();

  /** Sets (a positive number) or lifts (`null`) the limit of job `jobId`'s count subtasks. */
  setLimit(jobId: string, recordsPerSecond: number | null): void {
    this.set.set(jobId, recordsPerSecond);
  }

  /**
   * A count subtask of job `jobId` runs: its limit now, in records per second (`undefined`: none),
   * whatever the job's message set, else `initial`. Call the returned `done` when it ends.
   */
  track(
    jobId: string,
    initial: number | undefined,
  ): { readonly limit: () => number | undefined; readonly done: () => void } {
    this.running.set(jobId, (this.running.get(jobId) ?? 0) + 1);
    let ended = false;
    return {
      limit: () => {
        const set = this.set.get(jobId);
        return set === undefined ? initial : (set ?? undefined);
      },
      done: () => {
        if (ended) return;
        ended = true;
        const left = (this.running.get(jobId) ?? 1) - 1;
        if (left > 0) {
          this.running.set(jobId, left);
          return;
        }
        this.running.delete(jobId);
        this.set.delete(jobId);
      },
    };
  }
}
