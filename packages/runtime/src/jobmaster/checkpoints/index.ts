export {
  CheckpointCoordinator,
  type CheckpointCoordinatorOptions,
  type CheckpointCoordinatorShutdownStatus,
  type CheckpointFailure,
  type CheckpointNotificationTarget,
  type CheckpointPlan,
  type CheckpointTriggerTarget,
} from "./checkpoint-coordinator.js";
export {
  type CheckpointCoordinatorConfiguration,
  checkpointCoordinatorConfigurationOf,
  retainsCheckpointsAfter,
} from "./checkpoint-coordinator-configuration.js";
export {
  type CheckpointStatsGroup,
  type CheckpointStatsSnapshot,
  type CheckpointStatsSource,
  CheckpointStatsTracker,
} from "./checkpoint-stats-tracker.js";
export {
  type CheckpointedVertex,
  CompletedCheckpoint,
  type CompletedCheckpointProperties,
  type FinishedSubtask,
  type SubtaskCheckpointState,
} from "./completed-checkpoint.js";
export {
  loadCompletedCheckpoint,
  loadSavepoint,
  type SavepointRestoreSettings,
} from "./completed-checkpoint-loader.js";
export { discardJobCheckpoints } from "./discard-job-checkpoints.js";
export {
  PendingCheckpoint,
  type TaskAcknowledgeResult,
  type TaskToWaitFor,
} from "./pending-checkpoint.js";
export { StandaloneCheckpointIDCounter } from "./standalone-checkpoint-id-counter.js";
export { StateAssignmentOperation } from "./state-assignment-operation.js";
