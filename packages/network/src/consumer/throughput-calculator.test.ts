import { describe, expect, it } from "vitest";
import { ThroughputCalculator } from "./throughput-calculator.js";

// Cases ported from Flink's ThroughputCalculatorTest (its facts, not its code).

describe("ThroughputCalculator", () => {
  let now = 0;
  const clock = () => now;

  it("testCorrectThroughputCalculation: bytes over the measured time", () => {
    now = 0;
    const calculator = new ThroughputCalculator(clock);
    calculator.incomingDataSize(6_666);
    now = 3_000;
    expect(calculator.calculateThroughput()).toBe(2_222);
    // A new period starts: the next result covers only what came since.
    calculator.incomingDataSize(1_000);
    now = 4_000;
    expect(calculator.calculateThroughput()).toBe(1_000);
  });

  it("testPauseMeasurement: time while paused does not count", () => {
    now = 0;
    const calculator = new ThroughputCalculator(clock);
    calculator.incomingDataSize(1_000);
    now = 1_000;
    calculator.pauseMeasurement();
    now = 10_000;
    calculator.resumeMeasurement();
    calculator.incomingDataSize(1_000);
    now = 11_000;
    expect(calculator.calculateThroughput()).toBe(1_000);
  });

  it("testResumeMeasurementOnData: data arriving while paused resumes the measurement", () => {
    now = 0;
    const calculator = new ThroughputCalculator(clock);
    calculator.pauseMeasurement();
    now = 5_000;
    calculator.incomingDataSize(500);
    now = 6_000;
    expect(calculator.calculateThroughput()).toBe(500);
  });

  it("testNoMeasurementTime: a period without measured time repeats the last result", () => {
    now = 0;
    const calculator = new ThroughputCalculator(clock);
    calculator.incomingDataSize(2_000);
    now = 1_000;
    calculator.pauseMeasurement();
    expect(calculator.calculateThroughput()).toBe(2_000);
    now = 9_000;
    expect(calculator.calculateThroughput()).toBe(2_000);
    expect(calculator.getLastThroughput()).toBe(2_000);
  });
});
