export {
  AlignedCheckpointBarrierHandler,
  type CheckpointBarrierHandler,
  CheckpointBarrierTracker,
  type CheckpointListener,
} from "./checkpoint-barrier-handler.js";
