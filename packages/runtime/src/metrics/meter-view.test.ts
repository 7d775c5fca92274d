import { describe, expect, it } from "vitest";
import { MeterView } from "./meter-view.js";
import { SimpleCounter } from "./simple-counter.js";

describe("MeterView", () => {
  it("averages the rate over the last 60 seconds, updated every 5 seconds, as Flink's MeterView", () => {
    const counter = new SimpleCounter();
    const meter = new MeterView(counter);
    expect(meter.timeSpanInSeconds).toBe(60);
    counter.inc(300);
    meter.update();
    // After 5 s the window still covers 60 s: the rate rises towards the steady one.
    expect(meter.getRate()).toBe(300 / 60);
    for (let tick = 2; tick <= 12; tick++) {
      counter.inc(300);
      meter.update();
    }
    // 300 events every 5 s: 60 per second once the window is full.
    expect(meter.getRate()).toBe(60);
    counter.inc(300);
    meter.update();
    expect(meter.getRate()).toBe(60);
    for (let tick = 0; tick < 12; tick++) meter.update();
    expect(meter.getRate()).toBe(0);
    expect(meter.getCount()).toBe(13 * 300);
  });

  it("keeps the window a multiple of 5 seconds and at least 5 seconds", () => {
    const counter = new SimpleCounter();
    expect(new MeterView(counter, 7).timeSpanInSeconds).toBe(5);
    const shortest = new MeterView(counter, 2);
    expect(shortest.timeSpanInSeconds).toBe(5);
    counter.inc(50);
    shortest.update();
    expect(shortest.getRate()).toBe(10);
  });

  it("reads a count through a function and leaves counts from before it was created out of its rate", () => {
    let count = 1_000;
    const meter = new MeterView(() => count);
    count += 600;
    meter.update();
    expect(meter.getRate()).toBe(10);
    expect(meter.getCount()).toBe(1_600);
  });
});
