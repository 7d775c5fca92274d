export {
  CheckpointBarrierHandler,
  type CheckpointBarrierHandlerOptions,
} from "./checkpoint-barrier-handler.js";
export { CheckpointBarrierTracker } from "./checkpoint-barrier-tracker.js";
export { CheckpointFailureReason } from "./checkpoint-failure-reason.js";
export { type CheckpointMetrics, NO_CHECKPOINT_METRICS } from "./checkpoint-metrics.js";
export type { CheckpointableInput } from "./checkpointable-input.js";
export type { CheckpointableTask } from "./checkpointable-task.js";
export { CheckpointedInputGate } from "./checkpointed-input-gate.js";
export { CheckpointingMode } from "./checkpointing-mode.js";
export { type Clock, SystemClock } from "./clock.js";
export {
  type CreateCheckpointBarrierHandlerOptions,
  createCheckpointBarrierHandler,
} from "./create-checkpoint-barrier-handler.js";
export type { InputChannelInfo } from "./input-channel-info.js";
export { SingleCheckpointBarrierHandler } from "./single-checkpoint-barrier-handler.js";
