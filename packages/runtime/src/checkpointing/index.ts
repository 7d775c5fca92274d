export type { InputChannelInfo } from "@sluice/runtime-api";
export {
  type AcknowledgeCheckpoint,
  AcknowledgeCheckpointCodec,
  type AcknowledgeCheckpointJSON,
  parseCheckpointId,
} from "./acknowledge-checkpoint.js";
export { ChannelStateSerializer } from "./channel-state-serializer.js";
export { ChannelStateWriterImpl } from "./channel-state-writer-impl.js";
export {
  CheckpointBarrierHandler,
  type CheckpointBarrierHandlerOptions,
} from "./checkpoint-barrier-handler.js";
export { CheckpointBarrierTracker } from "./checkpoint-barrier-tracker.js";
export {
  CheckpointCoordinator,
  type CheckpointCoordinatorOptions,
  type CheckpointCoordinatorShutdownStatus,
  type CheckpointFailure,
  type CheckpointPlan,
  type CheckpointTriggerTarget,
} from "./checkpoint-coordinator.js";
export {
  type CheckpointCoordinatorConfiguration,
  checkpointCoordinatorConfigurationOf,
} from "./checkpoint-coordinator-configuration.js";
export { CheckpointError } from "./checkpoint-error.js";
export {
  CHECKPOINT_FAILURE_REASONS,
  CheckpointFailureReason,
  isCountedCheckpointFailure,
} from "./checkpoint-failure-reason.js";
export type { CheckpointHandler } from "./checkpoint-handler.js";
export {
  type CheckpointMetrics,
  NO_CHECKPOINT_METRICS,
  type TaskCheckpointMetrics,
} from "./checkpoint-metrics.js";
export type { CheckpointableInput } from "./checkpointable-input.js";
export type { CheckpointableTask } from "./checkpointable-task.js";
export { CheckpointedInputGate } from "./checkpointed-input-gate.js";
export { CheckpointingMode } from "./checkpointing-mode.js";
export { type Clock, SystemClock } from "./clock.js";
export { CompletedCheckpoint, type SubtaskCheckpointState } from "./completed-checkpoint.js";
export {
  type CreateCheckpointBarrierHandlerOptions,
  createCheckpointBarrierHandler,
} from "./create-checkpoint-barrier-handler.js";
export {
  type DeclineCheckpoint,
  DeclineCheckpointCodec,
  type DeclineCheckpointJSON,
} from "./decline-checkpoint.js";
export {
  type FileStateHandle,
  FsCheckpointStorage,
  METADATA_FILE_NAME,
  type TaskSnapshot,
  type TaskStateIdentity,
} from "./fs-checkpoint-storage.js";
export {
  PendingCheckpoint,
  type TaskAcknowledgeResult,
  type TaskToWaitFor,
} from "./pending-checkpoint.js";
export { RecoveredInputChannel } from "./recovered-input-channel.js";
export { SingleCheckpointBarrierHandler } from "./single-checkpoint-barrier-handler.js";
export {
  SubtaskCheckpointCoordinator,
  type SubtaskCheckpointCoordinatorOptions,
  type TaskCheckpointStats,
  type UnalignedCheckpointsSettings,
} from "./subtask-checkpoint-coordinator.js";
export {
  channelStateSize,
  EMPTY_CHANNEL_STATE,
  type InputChannelStateHandle,
  type ResultSubpartitionStateHandle,
  type TaskChannelState,
} from "./task-channel-state.js";
