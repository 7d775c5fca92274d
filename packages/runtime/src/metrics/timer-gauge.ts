import type { Gauge } from "@sluice/runtime-api";
import { type Clock, SystemClock } from "../clock/clock.js";
import { UPDATE_INTERVAL_SECONDS, type View } from "./view.js";

/** Flink's default window of a timer gauge: the last 60 seconds. */
export const DEFAULT_TIMER_GAUGE_TIME_SPAN_SECONDS = 60;

const MILLIS_PER_SECOND = 1000;

/**
 * Measures how much of each second is spent in a state (Flink's `TimerGauge`): idle, or
 * back-pressured. Code calls {@link markStart} when the state begins and {@link markEnd} when it
 * ends; the {@link ViewUpdater} calls {@link update} every 5 s, which closes the interval, and the
 * value is the milliseconds per second in that state averaged over the window (60 s, as Flink),
 * between 0 and 1000. A state that is still going on when `update()` runs counts up to that
 * moment, so a task blocked for an hour shows 1000 all along, not 0 until it wakes up.
 *
 * Also kept: the total time in the state (`getAccumulatedCount`, Flink's `accumulated*Time`) and
 * the longest single period of the last interval (`getMaxSingleMeasurement`).
 */
export class TimerGauge implements Gauge, View {
  /** Tells reporters this is a gauge. */
  readonly metricType = "gauge" as const;
  private readonly clock: Clock;
  private readonly values: number[];
  private filled = 0;
  private index = 0;
  private value = 0;
  /** Milliseconds in the state since the last update. */
  private currentCount = 0;
  private accumulatedCount = 0;
  private measuring = false;
  /** When the current period started (for its length). */
  private measurementStart = 0;
  /** When time was last added to the counts (the period's start, or the last update). */
  private lastUpdate = 0;
  private currentMaxSingleMeasurement = 0;
  private previousMaxSingleMeasurement = 0;

  /**
   * @param clock where time comes from (default the process's monotonic clock).
   * @param timeSpanInSeconds the averaging window (default 60 s; a multiple of 5, at least 5).
   */
  constructor(
    clock: Clock = SystemClock,
    timeSpanInSeconds = DEFAULT_TIMER_GAUGE_TIME_SPAN_SECONDS,
  ) {
    this.clock = clock;
    const span = Math.max(
      timeSpanInSeconds - (timeSpanInSeconds % UPDATE_INTERVAL_SECONDS),
      UPDATE_INTERVAL_SECONDS,
    );
    this.values = new Array<number>(span / UPDATE_INTERVAL_SECONDS).fill(0);
  }

  /** The state begins (no effect while it is already measuring). */
  markStart(): void {
    if (this.measuring) return;
    this.measuring = true;
    const now = this.now();
    this.measurementStart = now;
    this.lastUpdate = now;
  }

  /** The state ends (no effect while it is not measuring). */
  markEnd(): void {
    if (!this.measuring) return;
    this.measuring = false;
    const now = this.now();
    // Only the time since the last update: what came before was counted by update().
    this.add(now - this.lastUpdate);
    this.currentMaxSingleMeasurement = Math.max(
      this.currentMaxSingleMeasurement,
      now - this.measurementStart,
    );
  }

  /** True between `markStart()` and `markEnd()`. */
  isMeasuring(): boolean {
    return this.measuring;
  }

  /** Closes the interval (counting a period still going on) and recomputes the value. */
  update(): void {
    if (this.measuring) {
      const now = this.now();
      this.add(now - this.lastUpdate);
      this.lastUpdate = now;
      this.currentMaxSingleMeasurement = Math.max(
        this.currentMaxSingleMeasurement,
        now - this.measurementStart,
      );
    }
    const values = this.values;
    values[this.index] = this.currentCount;
    this.index = (this.index + 1) % values.length;
    this.filled = Math.min(this.filled + 1, values.length);
    let total = 0;
    for (let i = 0; i < this.filled; i++) total += values[i] as number;
    const perSecond = total / (UPDATE_INTERVAL_SECONDS * this.filled);
    this.value = Math.max(0, Math.min(MILLIS_PER_SECOND, Math.floor(perSecond)));
    this.previousMaxSingleMeasurement = Math.floor(this.currentMaxSingleMeasurement);
    this.currentCount = 0;
    this.currentMaxSingleMeasurement = 0;
  }

  /** Milliseconds per second in the state, averaged over the window, as of the last update. */
  getValue(): number {
    return this.value;
  }

  /** The longest single period in the state during the last update interval, in ms. */
  getMaxSingleMeasurement(): number {
    return this.previousMaxSingleMeasurement;
  }

  /** Total milliseconds in the state so far, including a period still going on. */
  getAccumulatedCount(): number {
    const running = this.measuring ? this.now() - this.lastUpdate : 0;
    return Math.floor(this.accumulatedCount + running);
  }

  private add(millis: number): void {
    this.currentCount += millis;
    this.accumulatedCount += millis;
  }

  private now(): number {
    return this.clock.relativeTimeNanos() / 1_000_000;
  }
}
