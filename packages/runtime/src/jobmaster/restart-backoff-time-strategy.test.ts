import { ErrorCodes } from "@sluice/core";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../clock/test-support/manual-clock.js";
import { Configuration } from "../config/configuration.js";
import {
  createRestartBackoffTimeStrategy,
  type RestartBackoffTimeStrategy,
} from "./restart-backoff-time-strategy.js";

function restarts(config: Record<string, unknown>, failures: number): boolean[] {
  const strategy = createRestartBackoffTimeStrategy(new Configuration(config));
  return Array.from({ length: failures }, () => {
    strategy.notifyFailure(new Error("boom"));
    return strategy.canRestart();
  });
}

describe("createRestartBackoffTimeStrategy", () => {
  it("allows restart-strategy.fixed-delay.attempts restarts, each after the configured delay", () => {
    const config = {
      "restart-strategy.type": "fixed-delay",
      "restart-strategy.fixed-delay.attempts": 2,
      "restart-strategy.fixed-delay.delay": "250ms",
    };
    expect(restarts(config, 3)).toEqual([true, true, false]);
    expect(createRestartBackoffTimeStrategy(new Configuration(config)).getBackoffTime()).toBe(250);
  });

  it("uses Flink's defaults: one attempt after 1 s for fixed-delay, and the old key", () => {
    const strategy = createRestartBackoffTimeStrategy(
      new Configuration({ "restart-strategy": "fixeddelay" }),
    );
    expect(strategy.name).toBe("fixed-delay");
    expect(strategy.getBackoffTime()).toBe(1000);
    expect(restarts({ "restart-strategy": "fixed-delay" }, 2)).toEqual([true, false]);
  });

  it("never restarts with none, off or disable", () => {
    for (const name of ["none", "off", "disable"]) {
      expect(restarts({ "restart-strategy.type": name }, 1)).toEqual([false]);
    }
  });

  it("without a configured strategy restarts only jobs that checkpoint: exponential-delay with Flink 1.19's defaults, without limit", () => {
    expect(restarts({}, 1)).toEqual([false]);
    const checkpointing = { "execution.checkpointing.interval": "1s" };
    expect(restarts(checkpointing, 100).every(Boolean)).toBe(true);
    const clock = new ManualClock();
    const strategy = createRestartBackoffTimeStrategy(new Configuration(checkpointing), clock);
    expect(strategy.name).toBe("exponential-delay");
    // 1 s, then × 1.5 after each failure up to 1 min, each ± 10 % (the jitter).
    const expected = [1_000, 1_500, 2_250, 3_375, 5_062, 7_593, 11_389, 17_083, 25_624, 38_436];
    for (const backoff of [...expected, 57_654, 60_000, 60_000]) {
      strategy.notifyFailure(new Error("the checkpoint disk is full"));
      const waited = strategy.getBackoffTime();
      expect(waited).toBeGreaterThanOrEqual(Math.floor(backoff * 0.9));
      expect(waited).toBeLessThanOrEqual(Math.min(60_000, Math.ceil(backoff * 1.1)));
      expect(strategy.canRestart()).toBe(true);
      clock.advanceMillis(waited);
    }
    // The configured exponential-delay keys apply to the default too.
    const tuned = createRestartBackoffTimeStrategy(
      new Configuration({
        ...checkpointing,
        "restart-strategy.exponential-delay.initial-backoff": "10ms",
        "restart-strategy.exponential-delay.jitter-factor": 0,
      }),
    );
    tuned.notifyFailure(new Error("boom"));
    expect(tuned.getBackoffTime()).toBe(10);
  });
});

describe("failure-rate (FailureRateRestartBackoffTimeStrategyTest)", () => {
  const config = (extra: Record<string, unknown> = {}) =>
    new Configuration({
      "restart-strategy.type": "failure-rate",
      "restart-strategy.failure-rate.max-failures-per-interval": 2,
      "restart-strategy.failure-rate.failure-rate-interval": "10s",
      "restart-strategy.failure-rate.delay": "300ms",
      ...extra,
    });

  it("restarts while the failures within the interval stay at the maximum, and fails the job on one more (testFailuresExceedingRate)", () => {
    const clock = new ManualClock();
    const strategy = createRestartBackoffTimeStrategy(config(), clock);
    expect(strategy.name).toBe("failure-rate");
    expect(strategy.getBackoffTime()).toBe(300);
    const verdicts = [0, 1, 2].map(() => {
      strategy.notifyFailure(new Error("boom"));
      clock.advanceMillis(1_000);
      return strategy.canRestart();
    });
    expect(verdicts).toEqual([true, true, false]);
  });

  it("restarts for ever when the failures are spread wider than the interval (testManyFailuresWithinRate)", () => {
    const clock = new ManualClock();
    const strategy = createRestartBackoffTimeStrategy(config(), clock);
    for (let i = 0; i < 20; i++) {
      strategy.notifyFailure(new Error("boom"));
      expect(strategy.canRestart()).toBe(true);
      clock.advanceMillis(5_001);
    }
  });

  it("uses Flink's defaults: one failure a minute, 1 s apart", () => {
    const clock = new ManualClock();
    const strategy = createRestartBackoffTimeStrategy(
      new Configuration({ "restart-strategy.type": "failurerate" }),
      clock,
    );
    expect(strategy.getBackoffTime()).toBe(1_000);
    strategy.notifyFailure(new Error("boom"));
    expect(strategy.canRestart()).toBe(true);
    clock.advanceMillis(59_000);
    strategy.notifyFailure(new Error("boom"));
    expect(strategy.canRestart()).toBe(false);
    clock.advanceMillis(1_001);
    expect(strategy.canRestart()).toBe(true);
  });
});

describe("exponential-delay (ExponentialDelayRestartBackoffTimeStrategyTest)", () => {
  const settings = {
    "restart-strategy.type": "exponential-delay",
    "restart-strategy.exponential-delay.initial-backoff": "100ms",
    "restart-strategy.exponential-delay.max-backoff": "1s",
    "restart-strategy.exponential-delay.backoff-multiplier": 2,
    "restart-strategy.exponential-delay.reset-backoff-threshold": "10s",
    "restart-strategy.exponential-delay.jitter-factor": 0,
  };

  function backoffs(strategy: RestartBackoffTimeStrategy, clock: ManualClock, failures: number) {
    return Array.from({ length: failures }, () => {
      strategy.notifyFailure(new Error("boom"));
      const backoff = strategy.getBackoffTime();
      clock.advanceMillis(backoff);
      return backoff;
    });
  }

  it("multiplies the backoff after each failure up to the max (testMaxBackoff)", () => {
    const clock = new ManualClock();
    const strategy = createRestartBackoffTimeStrategy(new Configuration(settings), clock);
    expect(strategy.name).toBe("exponential-delay");
    expect(backoffs(strategy, clock, 6)).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(strategy.canRestart()).toBe(true);
  });

  it("starts over from the initial backoff once the job ran the reset threshold without failure (testResetBackoff)", () => {
    const clock = new ManualClock();
    const strategy = createRestartBackoffTimeStrategy(new Configuration(settings), clock);
    expect(backoffs(strategy, clock, 3)).toEqual([100, 200, 400]);
    clock.advanceMillis(10_000 + 400);
    expect(backoffs(strategy, clock, 2)).toEqual([100, 200]);
  });

  it("fails the job after attempts-before-reset-backoff restarts, and counts again after a reset (testMaxAttempts)", () => {
    const clock = new ManualClock();
    const strategy = createRestartBackoffTimeStrategy(
      new Configuration({
        ...settings,
        "restart-strategy.exponential-delay.attempts-before-reset-backoff": 2,
      }),
      clock,
    );
    const verdicts = () =>
      [0, 1, 2].map(() => {
        strategy.notifyFailure(new Error("boom"));
        clock.advanceMillis(strategy.getBackoffTime());
        return strategy.canRestart();
      });
    expect(verdicts()).toEqual([true, true, false]);
    clock.advanceMillis(20_000);
    expect(verdicts()).toEqual([true, true, false]);
  });

  it("adds a jitter within the jitter factor of the backoff (testJitter)", () => {
    const clock = new ManualClock();
    const strategy = createRestartBackoffTimeStrategy(
      new Configuration({ ...settings, "restart-strategy.exponential-delay.jitter-factor": 0.25 }),
      clock,
    );
    strategy.notifyFailure(new Error("boom"));
    const seen = new Set(Array.from({ length: 200 }, () => strategy.getBackoffTime()));
    for (const backoff of seen) {
      expect(backoff).toBeGreaterThanOrEqual(75);
      expect(backoff).toBeLessThanOrEqual(125);
    }
    expect(seen.size).toBeGreaterThan(1);
  });

  it("uses Flink 1.19's defaults and refuses an initial backoff above the max, naming both keys", () => {
    const clock = new ManualClock();
    const strategy = createRestartBackoffTimeStrategy(
      new Configuration({ "restart-strategy.type": "exponentialdelay" }),
      clock,
    );
    strategy.notifyFailure(new Error("boom"));
    expect(strategy.getBackoffTime()).toBeGreaterThanOrEqual(900);
    expect(strategy.getBackoffTime()).toBeLessThanOrEqual(1_100);
    expect(() =>
      createRestartBackoffTimeStrategy(
        new Configuration({
          "restart-strategy.type": "exponential-delay",
          "restart-strategy.exponential-delay.initial-backoff": "2min",
        }),
      ),
    ).toThrow(
      expect.objectContaining({
        code: ErrorCodes.CONFIG,
        message: expect.stringMatching(/initial-backoff \(120000 ms\).*max-backoff \(60000 ms\)/),
      }),
    );
  });
});
