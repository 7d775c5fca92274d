export { ALL_OPTIONS, CONFIG_OPTION_GROUPS, type ConfigOptionGroup } from "./all-options.js";
export {
  BatchShuffleOptions,
  COMPRESSION_CODECS,
  type CompressionCodec,
} from "./batch-shuffle-options.js";
export { CheckpointingOptions } from "./checkpointing-options.js";
export {
  CHECKPOINTING_MODES,
  EXTERNALIZED_CHECKPOINT_RETENTIONS,
  ExecutionCheckpointingOptions,
  type ExternalizedCheckpointRetention,
} from "./execution-checkpointing-options.js";
export { ExecutionOptions } from "./execution-options.js";
export { HeartbeatManagerOptions } from "./heartbeat-manager-options.js";
export { HighAvailabilityOptions } from "./high-availability-options.js";
export { JobManagerOptions } from "./job-manager-options.js";
export {
  MetricOptions,
  MetricReporterOptions,
  metricReporterKeyPrefix,
} from "./metric-options.js";
export { NettyShuffleEnvironmentOptions } from "./netty-shuffle-options.js";
export { NetworkMemoryOptions } from "./network-memory-options.js";
export { RestOptions } from "./rest-options.js";
export {
  RESTART_STRATEGIES,
  type RestartStrategyName,
  RestartStrategyOptions,
} from "./restart-strategy-options.js";
export { SecurityOptions } from "./security-options.js";
export {
  DEFAULT_SHUFFLE_SERVICE_FACTORY,
  ShuffleServiceOptions,
} from "./shuffle-service-options.js";
export {
  TASK_SLOTS_MODES,
  TaskManagerOptions,
  type TaskSlotsMode,
} from "./task-manager-options.js";
