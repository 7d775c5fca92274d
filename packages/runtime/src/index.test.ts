import * as core from "@sluice/core";
import * as runtimeApi from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import * as runtime from "./index.js";

describe("@sluice/runtime's public surface", () => {
  it("re-exports what an application needs from @sluice/runtime-api and @sluice/core, as the same objects", () => {
    const pairs: [string, unknown, unknown][] = [
      ["ResultPartitionType", runtime.ResultPartitionType, runtimeApi.ResultPartitionType],
      ["BatchShuffleOptions", runtime.BatchShuffleOptions, runtimeApi.BatchShuffleOptions],
      ["CheckpointingOptions", runtime.CheckpointingOptions, runtimeApi.CheckpointingOptions],
      ["ConfigOptions", runtime.ConfigOptions, runtimeApi.ConfigOptions],
      [
        "ExecutionCheckpointingOptions",
        runtime.ExecutionCheckpointingOptions,
        runtimeApi.ExecutionCheckpointingOptions,
      ],
      ["ExecutionOptions", runtime.ExecutionOptions, runtimeApi.ExecutionOptions],
      [
        "NettyShuffleEnvironmentOptions",
        runtime.NettyShuffleEnvironmentOptions,
        runtimeApi.NettyShuffleEnvironmentOptions,
      ],
      ["NetworkMemoryOptions", runtime.NetworkMemoryOptions, runtimeApi.NetworkMemoryOptions],
      ["RestartStrategyOptions", runtime.RestartStrategyOptions, runtimeApi.RestartStrategyOptions],
      ["RestOptions", runtime.RestOptions, runtimeApi.RestOptions],
      ["ShuffleServiceOptions", runtime.ShuffleServiceOptions, runtimeApi.ShuffleServiceOptions],
      ["TaskManagerOptions", runtime.TaskManagerOptions, runtimeApi.TaskManagerOptions],
      ["ErrorCodes", runtime.ErrorCodes, core.ErrorCodes],
      ["isSluiceError", runtime.isSluiceError, core.isSluiceError],
      ["SluiceError", runtime.SluiceError, core.SluiceError],
      ["CancelledError", runtime.CancelledError, core.CancelledError],
      ["ConfigurationError", runtime.ConfigurationError, core.ConfigurationError],
      ["IllegalArgumentError", runtime.IllegalArgumentError, core.IllegalArgumentError],
      ["IllegalStateError", runtime.IllegalStateError, core.IllegalStateError],
      ["InsufficientBuffersError", runtime.InsufficientBuffersError, core.InsufficientBuffersError],
    ];
    for (const [name, reExported, original] of pairs) {
      expect(reExported, name).toBeDefined();
      expect(reExported, name).toBe(original);
    }
    expect(runtime.ResultPartitionType.BLOCKING.isBlocking).toBe(true);
  });
});
