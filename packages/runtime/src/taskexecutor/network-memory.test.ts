import { ErrorCodes } from "@sluice/core";
import { readableConfigOf } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { deriveNetworkMemorySize } from "./network-memory.js";

const MB = 1024 * 1024;

describe("deriveNetworkMemorySize", () => {
  it("takes the fraction of the total memory", () => {
    const size = deriveNetworkMemorySize(readableConfigOf({}), 1024 * MB);
    expect(size.bytes).toBe(Math.floor(1024 * MB * 0.1));
    expect(size.derivation).toContain("taskmanager.memory.network.fraction 0.1");
  });

  it("raises the share to the minimum and cuts it to the maximum", () => {
    const config = readableConfigOf({
      "taskmanager.memory.network.min": "64mb",
      "taskmanager.memory.network.max": "128mb",
    });
    expect(deriveNetworkMemorySize(config, 100 * MB).bytes).toBe(64 * MB);
    expect(deriveNetworkMemorySize(config, 100 * MB).derivation).toContain("raised to");
    expect(deriveNetworkMemorySize(config, 10_000 * MB).bytes).toBe(128 * MB);
    expect(deriveNetworkMemorySize(config, 10_000 * MB).derivation).toContain("cut to");
  });

  it("reads the total from taskmanager.memory.flink.size when none is given", () => {
    const config = readableConfigOf({
      "taskmanager.memory.flink.size": "2gb",
      "taskmanager.memory.network.fraction": 0.2,
    });
    expect(deriveNetworkMemorySize(config).bytes).toBe(Math.floor(2048 * MB * 0.2));
  });

  it("is the minimum when no total memory is known", () => {
    const size = deriveNetworkMemorySize(
      readableConfigOf({ "taskmanager.memory.network.min": "8mb" }),
    );
    expect(size.bytes).toBe(8 * MB);
    expect(size.derivation).toContain("no total memory");
  });

  it("refuses a maximum below the minimum, naming both keys", () => {
    const config = readableConfigOf({
      "taskmanager.memory.network.min": "64mb",
      "taskmanager.memory.network.max": "32mb",
    });
    expect(() => deriveNetworkMemorySize(config)).toThrow(
      expect.objectContaining({
        code: ErrorCodes.CONFIG,
        message: expect.stringMatching(
          /taskmanager\.memory\.network\.max .* taskmanager\.memory\.network\.min/,
        ),
      }),
    );
  });
});
