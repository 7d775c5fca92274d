export {
  type AcknowledgeCheckpoint,
  AcknowledgeCheckpointCodec,
  type AcknowledgeCheckpointJSON,
  parseCheckpointId,
} from "./acknowledge-checkpoint.js";
export {
  CHECKPOINT_FAILURE_REASONS,
  CheckpointFailureReason,
  isCountedCheckpointFailure,
} from "./checkpoint-failure-reason.js";
export {
  type CheckpointMetrics,
  NO_CHECKPOINT_METRICS,
  type TaskCheckpointMetrics,
} from "./checkpoint-metrics.js";
export {
  CHECKPOINT_TRIGGER,
  type CheckpointTriggerOptions,
  CheckpointTriggerOptionsCodec,
  type CheckpointTriggerOptionsJSON,
  isSavepoint,
  isSynchronousSavepoint,
  SNAPSHOT_TYPE_NAMES,
  type SnapshotTypeName,
  snapshotTypeName,
  snapshotTypeOf,
} from "./checkpoint-trigger-options.js";
export { CheckpointingMode } from "./checkpointing-mode.js";
export {
  type DeclineCheckpoint,
  DeclineCheckpointCodec,
  type DeclineCheckpointJSON,
} from "./decline-checkpoint.js";
export type { FileStateHandle } from "./file-state-handle.js";
export type { JobMasterGateway } from "./job-master-gateway.js";
export {
  isLeadershipEpoch,
  leadershipEpochOf,
  NO_LEADERSHIP_EPOCH,
  randomLeadershipEpoch,
} from "./leadership-epoch.js";
export {
  describeThrowable,
  deserializeThrowable,
  type SerializedThrowable,
  serializeThrowable,
} from "./serialized-throwable.js";
export {
  createTaskDeploymentDescriptor,
  type InputGateSpec,
  type PartitionerSpec,
  type ProducedPartitionSpec,
  type RescaledSubtaskState,
  type RescaledTaskRestore,
  type TaskDeploymentDescriptor,
  TaskDeploymentDescriptorCodec,
  type TaskDeploymentDescriptorJSON,
  type TaskRestoreSpec,
  type TaskRestoreSpecJSON,
  taskNameWithSubtask,
} from "./task-deployment-descriptor.js";
export {
  failureOf,
  type TaskExecutionState,
  type TaskExecutionStateJSON,
  type TaskSerializers,
  taskExecutionStateFromJSON,
  taskExecutionStateToJSON,
} from "./task-execution-state.js";
export type { TaskExecutorGateway, TaskManagerLocation } from "./task-executor-gateway.js";
export type { UnalignedCheckpointsSettings } from "./unaligned-checkpoints-settings.js";
export type { UserCodeNames } from "./user-code-names.js";
