import type { DrainResult } from "../roles.js";

/**
 * How a receiver times its throughput: from the first arrival to the last. The records of the
 * first arrival are not timed, since they queued while the clock was not yet running.
 */
export class ArrivalClock {
  private first = -1;
  private firstCount = 0;
  private last = -1;

  /** Notes an arrival, after which `count` records have been received in all. */
  arrived(count: number): void {
    const now = performance.now();
    if (this.first < 0) {
      this.first = now;
      this.firstCount = count;
    }
    this.last = now;
  }

  /** Of `received` records: those after the first arrival, and the time from it to the last. */
  timed(received: number): { timedRecords: number; timedMs: number } {
    return { timedRecords: received - this.firstCount, timedMs: this.last - this.first };
  }

  /** A consumer's result: `received` records whose keys sum to `keySum`, timed by this clock. */
  drained(received: number, keySum: number, extra: Record<string, unknown>): DrainResult {
    return { received, keySum, ...this.timed(received), extra };
  }
}
