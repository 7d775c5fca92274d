import type { Counter } from "@sluice/runtime-api";

/**
 * A counter that code increments (Flink's `SimpleCounter`). Counting is one addition on a field,
 * cheap enough for the per-record path (`numRecordsIn`, `numRecordsOut`).
 */
export class SimpleCounter implements Counter {
  /** Tells reporters this is a counter. */
  readonly metricType = "counter" as const;
  private count = 0;

  /** Adds `n` (default 1). */
  inc(n = 1): void {
    this.count += n;
  }

  /** Subtracts `n` (default 1). */
  dec(n = 1): void {
    this.count -= n;
  }

  /** The current count. */
  getCount(): number {
    return this.count;
  }
}
