export type { InputChannelInfo } from "@sluice/runtime-api";
export { ChannelStateSerializer } from "./channel-state-serializer.js";
export { ChannelStateWriterImpl } from "./channel-state-writer-impl.js";
export {
  CheckpointBarrierHandler,
  type CheckpointBarrierHandlerOptions,
} from "./checkpoint-barrier-handler.js";
export { CheckpointBarrierTracker } from "./checkpoint-barrier-tracker.js";
export { CheckpointError } from "./checkpoint-error.js";
export type { CheckpointEventEmitter } from "./checkpoint-event-emitter.js";
export type { CheckpointHandler } from "./checkpoint-handler.js";
export type { CheckpointListener } from "./checkpoint-listener.js";
export type { CheckpointableInput } from "./checkpointable-input.js";
export type { CheckpointableTask } from "./checkpointable-task.js";
export { CheckpointedInputGate } from "./checkpointed-input-gate.js";
export {
  type CreateCheckpointBarrierHandlerOptions,
  createCheckpointBarrierHandler,
} from "./create-checkpoint-barrier-handler.js";
export {
  FsCheckpointStorage,
  METADATA_FILE_NAME,
  type TaskSnapshot,
  type TaskStateIdentity,
} from "./fs-checkpoint-storage.js";
export { RecoveredInputChannel } from "./recovered-input-channel.js";
export { SingleCheckpointBarrierHandler } from "./single-checkpoint-barrier-handler.js";
export {
  SubtaskCheckpointCoordinator,
  type SubtaskCheckpointCoordinatorOptions,
  type TaskCheckpointStats,
} from "./subtask-checkpoint-coordinator.js";
export {
  channelStateSize,
  EMPTY_CHANNEL_STATE,
  type InputChannelStateHandle,
  type ResultSubpartitionStateHandle,
  type TaskChannelState,
} from "./task-channel-state.js";
