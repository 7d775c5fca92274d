/**
 * The time sources a barrier handler measures with (Flink's Clock), replaceable in tests so
 * durations can be checked exactly without sleeping.
 */
export interface Clock {
  /** Wall-clock milliseconds since the epoch (compared with a barrier's timestamp). */
  absoluteTimeMillis(): number;
  /** Monotonic nanoseconds from an arbitrary origin (for durations). */
  relativeTimeNanos(): number;
}

/** The process's clocks: `Date.now()` and `performance.now()` in nanoseconds. */
export const SystemClock: Clock = Object.freeze({
  absoluteTimeMillis: () => Date.now(),
  relativeTimeNanos: () => Math.round(performance.now() * 1_000_000),
});
