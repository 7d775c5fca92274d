import type { Counter, Meter } from "@sluice/runtime-api";
import { UPDATE_INTERVAL_SECONDS, type View } from "./view.js";

/** Flink's default window of a meter: the rate is averaged over the last 60 seconds. */
export const DEFAULT_METER_TIME_SPAN_SECONDS = 60;

/**
 * A meter that derives its rate from a count in regular intervals (Flink's `MeterView`): every
 * {@link UPDATE_INTERVAL_SECONDS} the {@link ViewUpdater} records the count in a ring of
 * `timeSpan / 5 + 1` slots, and the rate is the difference between the newest and the oldest slot
 * divided by the time span. Nothing is computed per event, so the count can be any counter —
 * including a plugin's own field — at no cost on its hot path.
 *
 * As in Flink, the rate covers the whole window from the first update on: during the first
 * minute it rises towards the steady rate.
 */
export class MeterView implements Meter, View {
  /** Tells reporters this is a meter. */
  readonly metricType = "meter" as const;
  /** The window the rate is averaged over, in seconds (a multiple of 5, at least 5). */
  readonly timeSpanInSeconds: number;
  private readonly read: () => number;
  private readonly values: number[];
  private time = 0;
  private rate = 0;

  /**
   * @param count the counter (or a function returning the count) the rate is derived from.
   * @param timeSpanInSeconds the window (default 60 s); rounded down to a multiple of 5, at least 5.
   */
  constructor(
    count: Pick<Counter, "getCount"> | (() => number),
    timeSpanInSeconds = DEFAULT_METER_TIME_SPAN_SECONDS,
  ) {
    this.read = typeof count === "function" ? count : () => count.getCount();
    const span = Math.max(timeSpanInSeconds, UPDATE_INTERVAL_SECONDS);
    this.timeSpanInSeconds = span - (span % UPDATE_INTERVAL_SECONDS);
    // Starting from the current count (not 0) keeps counts from before the meter existed out of
    // its first window.
    this.values = new Array<number>(this.timeSpanInSeconds / UPDATE_INTERVAL_SECONDS + 1).fill(
      this.read(),
    );
  }

  /** Events per second over the window, as of the last update. */
  getRate(): number {
    return this.rate;
  }

  /** The current count. */
  getCount(): number {
    return this.read();
  }

  /** Records the count and recomputes the rate (every 5 s, by the view updater). */
  update(): void {
    const values = this.values;
    this.time = (this.time + 1) % values.length;
    values[this.time] = this.read();
    const oldest = values[(this.time + 1) % values.length] as number;
    this.rate = ((values[this.time] as number) - oldest) / this.timeSpanInSeconds;
  }
}
