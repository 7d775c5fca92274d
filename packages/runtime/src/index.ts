/**
 * `@sluice/runtime`: what an application needs (docs/api-tiers.md). The configuration and its
 * option groups, the job graph and job modules, the deployer and its execution and result, the
 * task manager (TaskExecutor) with the tasks and user code it runs, record readers and writers,
 * keyed and operator state, the transactional sinks, and the errors an application checks.
 * Building blocks for a shuffle plugin, a metric reporter or a control plane (the gateways, their
 * message codecs, the plugin loader, the checkpoint store) are in `@sluice/runtime/plugin`;
 * everything else stays inside the package.
 *
 * The names from the packages below the runtime (the partition type of an edge, the JSON types of
 * task parameters and checkpointed state, the option groups, the errors) are re-exported so that an
 * application depends on @sluice/runtime (and @sluice/cluster) only; they are the same objects as
 * in the lower packages.
 */
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
export { CheckpointError } from "./checkpointing/checkpoint-error.js";
export type { CheckpointHandler } from "./checkpointing/checkpoint-handler.js";
export type { CheckpointListener } from "./checkpointing/checkpoint-listener.js";
export { FsCheckpointStorage } from "./checkpointing/fs-checkpoint-storage.js";
export {
  CONFIG_WARNING_TYPE,
  Configuration,
  type ConfigurationLocation,
  type LoadConfigurationOptions,
  type UnknownKeyCheck,
} from "./config/configuration.js";
export { type DynamicProperties, parseDynamicProperties } from "./config/dynamic-properties.js";
export { knownOptionsWith } from "./config/unknown-keys.js";
export {
  PollStatus,
  RecordReader,
  type RecordReaderInput,
  type RecordReaderOptions,
} from "./io/record-reader.js";
export { RecordWriter } from "./io/record-writer.js";
export type { SavepointRestoreSettings } from "./jobmaster/checkpoints/completed-checkpoint-loader.js";
export type { ExecutionVertex } from "./jobmaster/execution-vertex.js";
export {
  type DeployOptions,
  JobDeployer,
  type JobDeployerOptions,
} from "./jobmaster/job-deployer.js";
export { JobExecution } from "./jobmaster/job-execution.js";
export {
  type DataSetConsumerSpec,
  type DistributionPattern,
  type IntermediateDataSet,
  type IntermediateDataSetSpec,
  type JobEdge,
  type JobEdgeSpec,
  JobGraph,
  type JobVertex,
  type JobVertexSpec,
} from "./jobmaster/job-graph.js";
export {
  defineJob,
  isJobModule,
  type JobModule,
  type JobModuleContext,
} from "./jobmaster/job-module.js";
export type { JobCheckpointsSummary, JobResult } from "./jobmaster/job-result.js";
export {
  isGloballyTerminal,
  type JobStatus,
  type JobStatusListener,
} from "./jobmaster/job-status.js";
export type { DeploymentOrder } from "./jobmaster/pipelined-region-scheduling-strategy.js";
export type { Placement, PlacementContext } from "./jobmaster/placement.js";
export {
  PluginContractError,
  PluginExportMissingError,
  PluginInstantiationError,
  PluginInvalidError,
  PluginNotFoundError,
} from "./loader/errors.js";
export type { LoaderConfiguration, PluginLoaderOptions } from "./loader/plugin-loader.js";
export type { ShuffleServiceLoaderOptions } from "./loader/shuffle-service-loader.js";
export { CheckpointingMode } from "./messages/checkpointing-mode.js";
export { describeThrowable, type SerializedThrowable } from "./messages/serialized-throwable.js";
export type { PartitionerSpec } from "./messages/task-deployment-descriptor.js";
export type { TaskSerializers } from "./messages/task-execution-state.js";
export type { MetricDump } from "./metrics/metric-dump.js";
export { MetricNames } from "./metrics/metric-names.js";
export { METRIC_WARNING_TYPE } from "./metrics/metric-warning.js";
export type { Partitioner } from "./partitioner/custom-partitioner-wrapper.js";
export { type Hashable, hashCodeOf } from "./partitioner/hash-code.js";
export { KeyGroupRange } from "./partitioner/key-group-range.js";
export {
  assignKeyToParallelOperator,
  assignToKeyGroup,
  computeDefaultMaxParallelism,
  computeOperatorIndexForKeyGroup,
} from "./partitioner/key-group-range-assignment.js";
export type { KeySelector } from "./partitioner/key-selector.js";
export { PARTITIONER_NAMES, type PartitionerName } from "./partitioner/partitioners.js";
export { SinkTransactionError } from "./sink/sink-transaction-error.js";
export {
  TransactionalFileSink,
  type TransactionalFileSinkOptions,
  type TransactionalFileSinkStats,
} from "./sink/transactional-file-sink.js";
export {
  type SinkTask,
  TwoPhaseCommitSink,
  type TwoPhaseCommitSinkStats,
} from "./sink/two-phase-commit-sink.js";
export type { KeyContext } from "./state/key-context.js";
export { KeyedStateBackend, type KeyedStateBackendOptions } from "./state/keyed-state-backend.js";
export { KeyedStateError } from "./state/keyed-state-error.js";
export {
  KEYED_STATE_SNAPSHOT_FORMAT,
  KEYED_STATE_SNAPSHOT_VERSION,
  type KeyedStateSnapshot,
} from "./state/keyed-state-snapshot.js";
export type { ListState } from "./state/list-state.js";
export type { MapState } from "./state/map-state.js";
export {
  OPERATOR_LIST_STATE_FORMAT,
  OPERATOR_LIST_STATE_VERSION,
  type OperatorListStateSnapshot,
  operatorListState,
  operatorListStateElements,
} from "./state/operator-list-state.js";
export { StateAssignmentError } from "./state/state-assignment-error.js";
export {
  ListStateDescriptor,
  MapStateDescriptor,
  type StateDescriptor,
  type StateType,
  ValueStateDescriptor,
} from "./state/state-descriptor.js";
export type { ValueState } from "./state/value-state.js";
export {
  TaskDeploymentError,
  TaskNotFoundError,
  TaskSlotThreadError,
} from "./taskexecutor/errors.js";
export type { NetworkMemorySize } from "./taskexecutor/network-memory.js";
export { Task } from "./taskexecutor/task.js";
export {
  TASK_WARNING_TYPE,
  TaskExecutor,
  type TaskExecutorOptions,
} from "./taskexecutor/task-executor.js";
export {
  BUILT_IN_SERIALIZERS,
  type JobMessageContext,
  type JobMessageHandler,
  type TaskInvokable,
  type UserCode,
} from "./taskexecutor/user-code-registry.js";
