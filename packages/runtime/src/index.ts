// What an application needs from the packages below the runtime, so that it depends on
// @sluice/runtime (and @sluice/cluster) only: the partition type of an edge (BLOCKING for a batch
// exchange), the JSON types of task parameters, results and checkpointed state, the option groups
// it sets or reads, and the errors it checks. They are the same objects as in the lower packages.
export {
  CancelledError,
  ConfigurationError,
  type ErrorCode,
  ErrorCodes,
  IllegalArgumentError,
  IllegalStateError,
  InsufficientBuffersError,
  isSluiceError,
  JobID,
  SluiceError,
} from "@sluice/core";
export {
  BatchShuffleOptions,
  CheckpointingOptions,
  type ConfigOption,
  ConfigOptions,
  ExecutionCheckpointingOptions,
  ExecutionOptions,
  type ExecutionState,
  FencingTokenError,
  type JsonObject,
  type JsonValue,
  NettyShuffleEnvironmentOptions,
  NetworkMemoryOptions,
  RestartStrategyOptions,
  RestOptions,
  ResultPartitionType,
  type ResultPartitionTypeName,
  ShuffleServiceOptions,
  TaskManagerOptions,
} from "@sluice/runtime-api";
export * from "./checkpointing/index.js";
export * from "./clock/index.js";
export * from "./config/index.js";
export * from "./io/index.js";
export * from "./jobmaster/index.js";
export * from "./loader/index.js";
export * from "./messages/index.js";
export * from "./metrics/index.js";
export * from "./partitioner/index.js";
export * from "./sink/index.js";
export * from "./state/index.js";
export * from "./taskexecutor/index.js";
