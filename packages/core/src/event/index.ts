export {
  CancelCheckpointMarker,
  CheckpointAlignment,
  CheckpointBarrier,
  type CheckpointOptions,
  DEFAULT_CHECKPOINT_OPTIONS,
  EndOfChannelStateEvent,
  EndOfData,
  EndOfPartitionEvent,
  type RuntimeEvent,
  SnapshotType,
  StopMode,
  TaskEvent,
} from "./runtime-event.js";
