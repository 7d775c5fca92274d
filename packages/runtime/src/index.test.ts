import * as core from "@sluice/core";
import * as runtimeApi from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import * as runtime from "./index.js";

describe("@sluice/runtime's public surface", () => {
  it("re-exports what an application needs from @sluice/runtime-api and @sluice/core, as the same objects", () => {
    expect(runtime.ResultPartitionType).toBe(runtimeApi.ResultPartitionType);
    expect(runtime.ResultPartitionType.BLOCKING.isBlocking).toBe(true);
    for (const group of [
      "BatchShuffleOptions",
      "CheckpointingOptions",
      "ConfigOptions",
      "ExecutionCheckpointingOptions",
      "ExecutionOptions",
      "NettyShuffleEnvironmentOptions",
      "NetworkMemoryOptions",
      "RestartStrategyOptions",
      "RestOptions",
      "ShuffleServiceOptions",
      "TaskManagerOptions",
    ] as const) {
      expect(runtime[group], group).toBe(runtimeApi[group]);
    }
    for (const name of [
      "ErrorCodes",
      "isSluiceError",
      "SluiceError",
      "CancelledError",
      "ConfigurationError",
      "IllegalArgumentError",
      "IllegalStateError",
      "InsufficientBuffersError",
    ] as const) {
      expect(runtime[name], name).toBe(core[name]);
    }
  });
});
