/**
 * @sluice/runtime-api: the shuffle SPI. What a shuffle plugin implements
 * (`ShuffleServiceFactory` → `ShuffleMaster` + `ShuffleEnvironment`, writers and gates), the
 * descriptors that cross process boundaries (with versioned JSON codecs), the partition types,
 * the configuration options with their Flink keys and defaults, and the brand that identifies a
 * factory. Types, data and small pure helpers only: no I/O, no shuffle implementation. The
 * forwarding bases of decorator plugins (`ForwardingShuffleServiceFactory`,
 * `ForwardingShuffleMaster`, `ForwardingShuffleEnvironment`) belong here because they are the
 * SPI's own shape: they only pass every call on to the plugin they wrap.
 */

// Channel state of unaligned checkpoints
export type { ChannelStateWriter } from "./checkpoint/channel-state-writer.js";
export type { InputChannelInfo } from "./checkpoint/input-channel-info.js";
export type { ResultSubpartitionInfo } from "./checkpoint/result-subpartition-info.js";
// Configuration options
export {
  atLeast,
  type ConfigOption,
  ConfigOptionBuilder,
  ConfigOptions,
  type ConfigOptionType,
  type FallbackKey,
  findRawValue,
  inRange,
  parseResolvedValue,
  type ReadableConfig,
  type ResolvedRawValue,
  readableConfigOf,
  TypedConfigOptionBuilder,
} from "./config/config-option.js";
export {
  DURATION_SYNTAX,
  formatDuration,
  parseDuration,
  tryParseDuration,
} from "./config/duration.js";
export {
  formatMemorySize,
  MEMORY_SIZE_SYNTAX,
  parseMemorySize,
  tryParseMemorySize,
} from "./config/memory-size.js";
export {
  ALL_OPTIONS,
  BatchShuffleOptions,
  CHECKPOINTING_MODES,
  CheckpointingOptions,
  COMPRESSION_CODECS,
  CONFIG_OPTION_GROUPS,
  type CompressionCodec,
  type ConfigOptionGroup,
  DEFAULT_SHUFFLE_SERVICE_FACTORY,
  EXTERNALIZED_CHECKPOINT_RETENTIONS,
  ExecutionCheckpointingOptions,
  ExecutionOptions,
  type ExternalizedCheckpointRetention,
  HeartbeatManagerOptions,
  HighAvailabilityOptions,
  JobManagerOptions,
  MetricOptions,
  MetricReporterOptions,
  metricReporterKeyPrefix,
  NettyShuffleEnvironmentOptions,
  NetworkMemoryOptions,
  RESTART_STRATEGIES,
  type RestartStrategyName,
  RestartStrategyOptions,
  RestOptions,
  SecurityOptions,
  ShuffleServiceOptions,
  TASK_SLOTS_MODES,
  TaskManagerOptions,
  type TaskSlotsMode,
} from "./config/options/index.js";
export { PORT_RANGE_SYNTAX, parsePortRange } from "./config/port-range.js";
// Writers, gates and partition types
export type { BufferOrEvent, InputGate, InputGateMetrics } from "./consumer/input-gate.js";
// Descriptors
export {
  createInputGateDeploymentDescriptor,
  type IndexRange,
  type InputGateDeploymentDescriptor,
  InputGateDeploymentDescriptorCodec,
  type InputGateDeploymentDescriptorJSON,
} from "./descriptors/input-gate-deployment-descriptor.js";
export {
  DESCRIPTOR_VERSION,
  type DescriptorCodec,
  defineCodec,
  JsonFields,
  type JsonObject,
  type JsonValue,
  nested,
} from "./descriptors/json-fields.js";
export {
  type PartitionDescriptor,
  PartitionDescriptorCodec,
  type PartitionDescriptorJSON,
} from "./descriptors/partition-descriptor.js";
export {
  createPartitionInfo,
  type PartitionInfo,
  PartitionInfoCodec,
  type PartitionInfoJSON,
} from "./descriptors/partition-info.js";
export {
  type ProducerDescriptor,
  ProducerDescriptorCodec,
  type ProducerDescriptorJSON,
} from "./descriptors/producer-descriptor.js";
export {
  createResultPartitionDeploymentDescriptor,
  type ResultPartitionDeploymentDescriptor,
  ResultPartitionDeploymentDescriptorCodec,
  type ResultPartitionDeploymentDescriptorJSON,
  UPPER_BOUND_MAX_PARALLELISM,
} from "./descriptors/result-partition-deployment-descriptor.js";
export {
  createNetworkShuffleDescriptor,
  createUnknownShuffleDescriptor,
  isLocalTo,
  isNetworkShuffleDescriptor,
  isUnknownShuffleDescriptor,
  type NetworkShuffleDescriptor,
  type PartitionConnectionInfo,
  type ShuffleDescriptor,
  ShuffleDescriptorCodec,
  type ShuffleDescriptorJSON,
  type UnknownShuffleDescriptor,
} from "./descriptors/shuffle-descriptor.js";
export {
  type TaskInputsOutputsDescriptor,
  TaskInputsOutputsDescriptorCodec,
  type TaskInputsOutputsDescriptorJSON,
} from "./descriptors/task-inputs-outputs-descriptor.js";
// Errors
export {
  DescriptorError,
  FencingTokenError,
  HighAvailabilityStateError,
  HighAvailabilityUnavailableError,
  MetricReporterError,
} from "./errors.js";
// High availability of the job manager
export type { CheckpointIDCounter } from "./high-availability/checkpoint-id-counter.js";
export {
  type CompletedCheckpointStore,
  checkMaxRetainedCheckpoints,
  type StoredCompletedCheckpoint,
} from "./high-availability/completed-checkpoint-store.js";
export {
  type HighAvailabilityServices,
  type HighAvailabilityServicesContext,
  type HighAvailabilityServicesFactory,
  isHighAvailabilityServicesFactory,
} from "./high-availability/high-availability-services.js";
export type { JobGraphStore } from "./high-availability/job-graph-store.js";
export type {
  GloballyTerminalJobStatus,
  JobResultEntry,
  JobResultStore,
} from "./high-availability/job-result-store.js";
export type {
  LeaderContender,
  LeaderElection,
  LeaderEndpoints,
} from "./high-availability/leader-election.js";
export type {
  LeaderInformation,
  LeaderRetrievalListener,
  LeaderRetrievalService,
} from "./high-availability/leader-retrieval-service.js";
// Metrics: what reporters see and implement
export type { Counter } from "./metrics/counter.js";
export type { Gauge } from "./metrics/gauge.js";
export type { Meter } from "./metrics/meter.js";
export { currentValueOf, type Metric, type MetricType } from "./metrics/metric.js";
export type { CharacterFilter, MetricGroup } from "./metrics/metric-group.js";
export type { MetricReporter } from "./metrics/metric-reporter.js";
export {
  isMetricReporterFactory,
  METRIC_REPORTER_FACTORY_BRAND,
  METRIC_REPORTER_FACTORY_MEMBERS,
  type MetricReporterContext,
  type MetricReporterFactory,
  missingMetricReporterFactoryMembers,
} from "./metrics/metric-reporter-factory.js";
export {
  type ConsumingConstraint,
  ResultPartitionType,
  type ResultPartitionTypeInfo,
  type ResultPartitionTypeName,
  resultPartitionTypeOf,
} from "./partition/result-partition-type.js";
export type {
  ResultPartitionMetrics,
  ResultPartitionWriter,
} from "./partition/result-partition-writer.js";
// The SPI
export type {
  ExecutionState,
  JobShuffleContext,
  PartitionProducerStateProvider,
  ShuffleEnvironmentContext,
  ShuffleIOOwnerContext,
  ShuffleMasterContext,
  ShuffleMetricSink,
  TaskEventPublisher,
} from "./shuffle/contexts.js";
export { ForwardingShuffleEnvironment } from "./shuffle/forwarding-shuffle-environment.js";
export { ForwardingShuffleMaster } from "./shuffle/forwarding-shuffle-master.js";
export { ForwardingShuffleServiceFactory } from "./shuffle/forwarding-shuffle-service-factory.js";
export type { ShuffleEnvironment } from "./shuffle/shuffle-environment.js";
export type { ShuffleMaster } from "./shuffle/shuffle-master.js";
export {
  isShuffleServiceFactory,
  missingShuffleServiceFactoryMembers,
  SHUFFLE_SERVICE_FACTORY_BRAND,
  SHUFFLE_SERVICE_FACTORY_MEMBERS,
  type ShuffleServiceFactory,
} from "./shuffle/shuffle-service-factory.js";
export type {
  SubpartitionRequest,
  TaskSlotThreadsContext,
} from "./shuffle/task-slot-threads.js";
