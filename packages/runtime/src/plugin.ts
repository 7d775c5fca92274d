/**
 * `@sluice/runtime/plugin`: what an implementation of a part of the runtime imports
 * (docs/api-tiers.md), as Flink's SPI and `@Internal` runtime classes are to its plugins and
 * deployments: the shuffle-service and plugin loader, the gateways between job manager and task
 * managers with the codecs of their messages (what a control plane such as @sluice/cluster, or a
 * shuffle TCK's worker, speaks), the completed-checkpoint store and statistics a job manager keeps,
 * and the checks a job manager runs at submission. An application needs none of it; it imports
 * `@sluice/runtime`.
 */
export { createRecordWriter } from "./io/record-writer.js";
export {
  checkpointCoordinatorConfigurationOf,
  retainsCheckpointsAfter,
} from "./jobmaster/checkpoints/checkpoint-coordinator-configuration.js";
export {
  type CheckpointStatsSource,
  CheckpointStatsTracker,
} from "./jobmaster/checkpoints/checkpoint-stats-tracker.js";
export {
  CompletedCheckpoint,
  type CompletedCheckpointProperties,
} from "./jobmaster/checkpoints/completed-checkpoint.js";
export {
  loadCompletedCheckpoint,
  loadSavepoint,
} from "./jobmaster/checkpoints/completed-checkpoint-loader.js";
export { discardJobCheckpoints } from "./jobmaster/checkpoints/discard-job-checkpoints.js";
export { JobGraphCodec, type JobGraphJSON } from "./jobmaster/job-graph-codec.js";
export { type LoadedJobModule, loadJobModule } from "./jobmaster/job-module.js";
export {
  createRestartBackoffTimeStrategy,
  type RestartBackoffTimeStrategy,
} from "./jobmaster/restart-backoff-time-strategy.js";
export { checkShuffleMemoryFits } from "./jobmaster/shuffle-memory-check.js";
export { checkUserCode } from "./jobmaster/user-code-check.js";
export {
  type FactoryReference,
  parseFactoryReference,
  SHUFFLE_SERVICE_ALIASES,
} from "./loader/factory-reference.js";
export {
  type ConfigurationAndShufflePlugin,
  type LoadConfigurationAndShufflePluginOptions,
  loadConfigurationAndShufflePlugin,
} from "./loader/load-configuration-and-shuffle-plugin.js";
export { type LoadedPlugin, loadPlugin, type PluginKind } from "./loader/plugin-loader.js";
export {
  type LoadedShuffleServiceFactory,
  ShuffleServiceLoader,
} from "./loader/shuffle-service-loader.js";
export {
  type AcknowledgeCheckpoint,
  AcknowledgeCheckpointCodec,
  parseCheckpointId,
} from "./messages/acknowledge-checkpoint.js";
export { CheckpointFailureReason } from "./messages/checkpoint-failure-reason.js";
export {
  type CheckpointTriggerOptions,
  CheckpointTriggerOptionsCodec,
  SNAPSHOT_TYPE_NAMES,
} from "./messages/checkpoint-trigger-options.js";
export { type DeclineCheckpoint, DeclineCheckpointCodec } from "./messages/decline-checkpoint.js";
export type { JobMasterGateway } from "./messages/job-master-gateway.js";
export { leadershipEpochOf } from "./messages/leadership-epoch.js";
export { deserializeThrowable, serializeThrowable } from "./messages/serialized-throwable.js";
export {
  type TaskDeploymentDescriptor,
  TaskDeploymentDescriptorCodec,
  type TaskDeploymentDescriptorJSON,
} from "./messages/task-deployment-descriptor.js";
export {
  type TaskExecutionState,
  type TaskExecutionStateJSON,
  taskExecutionStateFromJSON,
  taskExecutionStateToJSON,
} from "./messages/task-execution-state.js";
export type { TaskExecutorGateway, TaskManagerLocation } from "./messages/task-executor-gateway.js";
export type { UserCodeNames } from "./messages/user-code-names.js";
export type { MetricEndpoint } from "./metrics/metric-registry.js";
export { ScopeVariables } from "./metrics/scope-format.js";
export { type ChannelSelectorOptions, createChannelSelector } from "./partitioner/partitioners.js";
export { type ListenTarget, listenError } from "./taskexecutor/listen-error.js";
