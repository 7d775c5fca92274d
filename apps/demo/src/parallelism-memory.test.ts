import { ErrorCodes } from "@sluice/core";
import { readableConfigOf } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { checkParallelismFitsNetworkMemory } from "./parallelism-memory.js";

/** The fallback's key on, unless `extra` says otherwise. */
const withMemory = (mb: number, extra: Record<string, unknown> = {}) =>
  readableConfigOf({
    "taskmanager.memory.network.min": `${mb}mb`,
    "taskmanager.memory.network.max": `${mb}mb`,
    "taskmanager.network.memory.exclusive-buffers-fallback": true,
    ...extra,
  });

describe("the demo's parallelism check", () => {
  it("accepts the parallelisms the network memory serves, with the fallback", () => {
    expect(() => checkParallelismFitsNetworkMemory(withMemory(32), 64, 2)).not.toThrow();
    expect(() => checkParallelismFitsNetworkMemory(withMemory(64), 128, 2)).not.toThrow();
    expect(() => checkParallelismFitsNetworkMemory(withMemory(64), 256, 4)).not.toThrow();
    expect(() => checkParallelismFitsNetworkMemory(withMemory(64), 2, 2)).not.toThrow();
  });

  it("refuses parallelism 128 on 32 MiB, saying how much memory it needs and which keys set it", () => {
    expect(() => checkParallelismFitsNetworkMemory(withMemory(32), 128, 2)).toThrow(
      expect.objectContaining({
        code: ErrorCodes.CONFIG,
        message: expect.stringMatching(
          /--parallelism 128 on 2 task managers needs at least 64 MiB .* but has 32 MiB .*taskmanager\.memory\.network\.min=64mb/,
        ),
      }),
    );
  });

  it("refuses more partition requests on one connection than the data server accepts, naming the key", () => {
    expect(() => checkParallelismFitsNetworkMemory(withMemory(128), 256, 2)).toThrow(
      /16384 partition requests on each connection .*'taskmanager\.network\.max-partition-requests-per-connection' \(10000\)/,
    );
  });

  it("asks for the full buffers when the fallback is off", () => {
    const off = { "taskmanager.network.memory.exclusive-buffers-fallback": false };
    expect(() => checkParallelismFitsNetworkMemory(withMemory(32, off), 64, 2)).toThrow(
      /needs at least 130 MiB/,
    );
  });
});
