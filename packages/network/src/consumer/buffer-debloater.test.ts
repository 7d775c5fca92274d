import { ErrorCodes, IllegalArgumentError } from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { BufferDebloater, type BufferDebloaterOptions } from "./buffer-debloater.js";

// Cases ported from Flink's BufferDebloaterTest (its facts, not its code): the size holds
// `target` of data at the measured throughput over the buffers in use, within [min, max], and is
// announced only past the threshold or at the bounds.

function debloater(options: Partial<BufferDebloaterOptions> = {}): BufferDebloater {
  return new BufferDebloater({
    targetMillis: 1_000,
    maxBufferSize: 1_000,
    minBufferSize: 50,
    thresholdPercentages: 0,
    numberOfSamples: 1,
    ...options,
  });
}

describe("BufferDebloater", () => {
  it("testCorrectBufferSizeCalculation: throughput × target over the buffers in use", () => {
    // 3 333 bytes/s for 1 s over 3 buffers: 1 111 bytes each, above the maximum of 1 000.
    expect(debloater({ maxBufferSize: 2_000 }).recalculateBufferSize(3_333, 3)).toBe(1_111);
    // Half the target: half the size.
    expect(
      debloater({ maxBufferSize: 2_000, targetMillis: 500 }).recalculateBufferSize(3_333, 3),
    ).toBe(556);
  });

  it("testZeroBuffersInUse: no buffer in use counts as one", () => {
    expect(debloater().recalculateBufferSize(500, 0)).toBe(500);
  });

  it("testCalculatedBufferSizeLessThanMin: never below the minimum", () => {
    expect(debloater().recalculateBufferSize(30, 1)).toBe(50);
  });

  it("testCalculatedBufferSizeForThroughputZero: the minimum", () => {
    expect(debloater().recalculateBufferSize(0, 3)).toBe(50);
  });

  it("testConfiguredConsumptionTimeIsTooLow: a tiny target gives the minimum", () => {
    expect(debloater({ targetMillis: 1 }).recalculateBufferSize(3_333, 3)).toBe(50);
  });

  it("testCalculatedBufferSizeGreaterThanMax: capped at the maximum, which is the starting size", () => {
    const d = debloater();
    // Starting at the maximum, a size that stays there is no change worth announcing.
    expect(d.recalculateBufferSize(1_000_000, 1)).toBeUndefined();
    expect(d.getLastBufferSize()).toBe(1_000);
  });

  it("testSkipUpdate: changes below the threshold are not announced", () => {
    const d = debloater({ thresholdPercentages: 50 });
    expect(d.recalculateBufferSize(400, 1)).toBe(400);
    // 400 → 250 is 37.5 % of 400: skipped; → 199 is more than 50 %: announced.
    expect(d.recalculateBufferSize(250, 1)).toBeUndefined();
    expect(d.getLastBufferSize()).toBe(400);
    expect(d.recalculateBufferSize(199, 1)).toBe(199);
    // Up by less than half: skipped.
    expect(d.recalculateBufferSize(290, 1)).toBeUndefined();
  });

  it("testAnnouncedMaxBufferSizeDespiteLastDiffLessThanThreshold", () => {
    const d = debloater({ thresholdPercentages: 10 });
    expect(d.recalculateBufferSize(800, 1)).toBe(800);
    expect(d.recalculateBufferSize(950, 1)).toBe(950);
    // 950 → 1 000 is about 5 %, below the threshold, but the maximum is always announced.
    expect(d.recalculateBufferSize(5_000, 1)).toBe(1_000);
  });

  it("testAnnouncedMinBufferSizeEvenDespiteLastDiffLessThanThreshold", () => {
    const d = debloater({ thresholdPercentages: 10 });
    expect(d.recalculateBufferSize(55, 1)).toBe(55);
    // 55 → 50 is about 9 %, below the threshold, but the minimum is always announced.
    expect(d.recalculateBufferSize(10, 1)).toBe(50);
  });

  it("smooths the size with a moving average over `samples` recalculations", () => {
    // α = 2 / (3 + 1) = 0.5: from the maximum 1 000 halfway to 200, then halfway again.
    const d = debloater({ numberOfSamples: 3 });
    expect(d.recalculateBufferSize(200, 1)).toBe(600);
    expect(d.recalculateBufferSize(200, 1)).toBe(400);
  });

  it("BufferSizeEMATest testCalculationBufferSize: grows at most to twice the current size per step, as fast as it shrinks", () => {
    // α = 1 (one sample): the average is the raw size, capped at twice the current one.
    const d = debloater({ numberOfSamples: 1 });
    expect(d.recalculateBufferSize(0, 1)).toBe(50);
    // A raw size far above the maximum doubles the size step by step up to it.
    const steps = [1, 2, 3, 4, 5].map(() => d.recalculateBufferSize(1_000_000, 1));
    expect(steps).toEqual([100, 200, 400, 800, 1_000]);
  });

  it("BufferSizeEMATest: the cap applies before the average, so a jump above the maximum only goes half way", () => {
    // α = 0.5: 1 000 → 600 towards 200; then towards min(10⁶, 2 × 600): (1 200 + 600) / 2.
    const d = debloater({ numberOfSamples: 3 });
    expect(d.recalculateBufferSize(200, 1)).toBe(600);
    expect(d.recalculateBufferSize(1_000_000, 1)).toBe(900);
    // Shrinking to 0 halves the size at most, as before: (0 + 900) / 2.
    expect(d.recalculateBufferSize(0, 1)).toBe(450);
  });

  it("estimates how long the buffers in use take to consume", () => {
    const d = debloater();
    d.recalculateBufferSize(2_000, 4);
    // 4 buffers of 500 bytes at 2 000 bytes/s.
    expect(d.getLastEstimatedTimeToConsumeMillis()).toBe(1_000);
  });

  it("testNegative...: rejects settings that make no sense, naming them", () => {
    expectError(
      () => debloater({ minBufferSize: 0 }),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
      "min size must be > 0",
    );
    expectError(
      () => debloater({ maxBufferSize: 10 }),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
      "max size must be >= the min size 50",
    );
    expectError(
      () => debloater({ thresholdPercentages: 101 }),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
      "threshold-percentages",
    );
    expectError(
      () => debloater({ targetMillis: 0 }),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
      "target",
    );
    expectError(
      () => debloater({ numberOfSamples: 0 }),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
      "samples",
    );
  });
});
