export {
  EventSerializer,
  EventTypeIds,
  isTimeoutable,
  isUnalignedCheckpoint,
  needsAlignment,
} from "./event-serializer.js";
export {
  CancelCheckpointMarker,
  CheckpointAlignment,
  CheckpointBarrier,
  type CheckpointOptions,
  DEFAULT_CHECKPOINT_OPTIONS,
  EndOfChannelStateEvent,
  EndOfData,
  EndOfPartitionEvent,
  EventAnnouncement,
  type RuntimeEvent,
  SnapshotType,
  StopMode,
  TaskEvent,
} from "./runtime-event.js";
