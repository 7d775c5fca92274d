import { describe, expect, it } from "vitest";
import { ManualClock } from "../clock/test-support/manual-clock.js";
import { TimerGauge } from "./timer-gauge.js";

describe("TimerGauge", () => {
  it("reports the milliseconds per second spent in the state, averaged over the window", () => {
    const clock = new ManualClock();
    const gauge = new TimerGauge(clock);
    gauge.markStart();
    clock.advanceMillis(1_000);
    gauge.markEnd();
    clock.advanceMillis(4_000);
    gauge.update();
    // 1 s of 5 s.
    expect(gauge.getValue()).toBe(200);
    clock.advanceMillis(5_000);
    gauge.update();
    // 1 s of 10 s.
    expect(gauge.getValue()).toBe(100);
    expect(gauge.getAccumulatedCount()).toBe(1_000);
  });

  it("counts a period that is still going on at each update, up to that moment", () => {
    const clock = new ManualClock();
    const gauge = new TimerGauge(clock);
    gauge.markStart();
    clock.advanceMillis(5_000);
    gauge.update();
    expect(gauge.getValue()).toBe(1_000);
    expect(gauge.isMeasuring()).toBe(true);
    clock.advanceMillis(2_500);
    expect(gauge.getAccumulatedCount()).toBe(7_500);
    gauge.update();
    // 7.5 s of 10 s.
    expect(gauge.getValue()).toBe(750);
    expect(gauge.getMaxSingleMeasurement()).toBe(7_500);
  });

  it("adds only the time since the last update when a period ends after an update", () => {
    const clock = new ManualClock();
    const gauge = new TimerGauge(clock);
    gauge.markStart();
    clock.advanceMillis(3_000);
    clock.advanceMillis(2_000);
    gauge.update();
    clock.advanceMillis(1_000);
    gauge.markEnd();
    clock.advanceMillis(4_000);
    gauge.update();
    // 5 s in the first interval, 1 s in the second: the 5 s are not counted twice.
    expect(gauge.getValue()).toBe(600);
    expect(gauge.getAccumulatedCount()).toBe(6_000);
    expect(gauge.getMaxSingleMeasurement()).toBe(6_000);
  });

  it("forgets what is older than the window (60 s)", () => {
    const clock = new ManualClock();
    const gauge = new TimerGauge(clock);
    gauge.markStart();
    for (let i = 0; i < 12; i++) {
      clock.advanceMillis(5_000);
      gauge.update();
    }
    gauge.markEnd();
    expect(gauge.getValue()).toBe(1_000);
    for (let i = 0; i < 6; i++) {
      clock.advanceMillis(5_000);
      gauge.update();
    }
    expect(gauge.getValue()).toBe(500);
    for (let i = 0; i < 6; i++) {
      clock.advanceMillis(5_000);
      gauge.update();
    }
    expect(gauge.getValue()).toBe(0);
    expect(gauge.getMaxSingleMeasurement()).toBe(0);
  });

  it("ignores a second start while measuring and an end while not measuring", () => {
    const clock = new ManualClock();
    const gauge = new TimerGauge(clock);
    gauge.markEnd();
    gauge.markStart();
    clock.advanceMillis(1_000);
    gauge.markStart();
    clock.advanceMillis(1_000);
    gauge.markEnd();
    gauge.markEnd();
    expect(gauge.getAccumulatedCount()).toBe(2_000);
  });
});
