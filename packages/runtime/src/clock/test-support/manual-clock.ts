import type { Clock } from "../clock.js";

/** A clock that moves only when told (Flink's ManualClock). */
export class ManualClock implements Clock {
  private nanos = 0;
  private readonly epochMillis: number;

  constructor(epochMillis = 1_700_000_000_000) {
    this.epochMillis = epochMillis;
  }

  absoluteTimeMillis(): number {
    return this.epochMillis + Math.floor(this.nanos / 1_000_000);
  }

  relativeTimeNanos(): number {
    return this.nanos;
  }

  advanceMillis(millis: number): void {
    this.nanos += millis * 1_000_000;
  }
}
