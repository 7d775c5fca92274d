import { describe, expect, it } from "vitest";
import { Configuration } from "../config/configuration.js";
import { createRestartBackoffTimeStrategy } from "./restart-backoff-time-strategy.js";

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

  it("without a configured strategy restarts only jobs that checkpoint, without limit", () => {
    expect(restarts({}, 1)).toEqual([false]);
    const checkpointing = { "execution.checkpointing.interval": "1s" };
    expect(restarts(checkpointing, 100).every(Boolean)).toBe(true);
    expect(
      createRestartBackoffTimeStrategy(new Configuration(checkpointing)).getBackoffTime(),
    ).toBe(1000);
  });
});
