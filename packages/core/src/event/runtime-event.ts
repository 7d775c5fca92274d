/**
 * In-band events that travel through result partitions and input gates next to data buffers.
 * They are plain immutable values; `EventSerializer` turns them into Flink's byte layouts and
 * back.
 */

/** Signals that a subpartition has no more data: the last item a channel ever delivers. */
export class EndOfPartitionEvent {
  /** The shared instance; the event has no fields. */
  static readonly INSTANCE = new EndOfPartitionEvent();
  readonly kind = "EndOfPartition" as const;
  private constructor() {}
}

/** How a checkpoint is aligned across the channels of a task (wire byte in brackets). */
export enum CheckpointAlignment {
  /** Barriers are tracked, never block channels [0]. */
  AT_LEAST_ONCE = 0,
  /** Channels block until every barrier arrived [1]. */
  ALIGNED = 1,
  /** Barriers overtake in-flight data [2]. */
  UNALIGNED = 2,
  /** Aligned, even when unaligned checkpoints are enabled [3]. */
  FORCED_ALIGNED = 3,
}

/** The kind of snapshot a barrier starts (wire byte in brackets). */
export enum SnapshotType {
  CHECKPOINT = 0,
  SAVEPOINT = 1,
  SAVEPOINT_SUSPEND = 2,
  SAVEPOINT_TERMINATE = 3,
  FULL_CHECKPOINT = 4,
}

/** The options a checkpoint barrier carries. */
export interface CheckpointOptions {
  readonly snapshotType: SnapshotType;
  /** Savepoint format: 0 canonical, 1 native. Only meaningful for savepoints. */
  readonly savepointFormat?: 0 | 1;
  /** The storage location reference; `null` means the default location (wire length −1). */
  readonly targetLocation: Uint8Array | null;
  readonly alignment: CheckpointAlignment;
  /** Milliseconds after which an aligned barrier may turn unaligned; 0 = never. */
  readonly alignedCheckpointTimeout: bigint;
}

/** The default options: a plain aligned checkpoint to the default location. */
export const DEFAULT_CHECKPOINT_OPTIONS: CheckpointOptions = Object.freeze({
  snapshotType: SnapshotType.CHECKPOINT,
  targetLocation: null,
  alignment: CheckpointAlignment.ALIGNED,
  alignedCheckpointTimeout: 0n,
});

/** Marks the point in every channel's stream where checkpoint `id` is taken. */
export class CheckpointBarrier {
  readonly kind = "CheckpointBarrier" as const;
  constructor(
    /** The checkpoint id (monotonically increasing per job). */
    readonly id: bigint,
    /** Milliseconds since the epoch when the checkpoint was triggered. */
    readonly timestamp: bigint,
    readonly options: CheckpointOptions = DEFAULT_CHECKPOINT_OPTIONS,
  ) {}

  /**
   * This barrier as an unaligned one (Flink's `CheckpointBarrier.asUnaligned`): what an aligned
   * barrier becomes when its alignment timed out. It overtakes in-flight data, which is then
   * persisted as channel state. An unaligned barrier is returned as it is.
   */
  asUnaligned(): CheckpointBarrier {
    if (this.options.alignment === CheckpointAlignment.UNALIGNED) return this;
    const options: CheckpointOptions = Object.freeze({
      ...this.options,
      alignment: CheckpointAlignment.UNALIGNED,
      alignedCheckpointTimeout: 0n,
    });
    return new CheckpointBarrier(this.id, this.timestamp, options);
  }
}

/** Tells downstream tasks that checkpoint `checkpointId` was cancelled. */
export class CancelCheckpointMarker {
  readonly kind = "CancelCheckpointMarker" as const;
  constructor(readonly checkpointId: bigint) {}
}

/** How a stopping source ends its output (FLIP-147). Wire byte: DRAIN 0, NO_DRAIN 1. */
export enum StopMode {
  DRAIN = 0,
  NO_DRAIN = 1,
}

/** Signals that no more user records follow on this channel (events may still follow). */
export class EndOfData {
  readonly kind = "EndOfData" as const;
  constructor(readonly stopMode: StopMode = StopMode.DRAIN) {}
}

/** Marks the end of recovered in-flight channel state. */
export class EndOfChannelStateEvent {
  static readonly INSTANCE = new EndOfChannelStateEvent();
  readonly kind = "EndOfChannelState" as const;
  private constructor() {}
}

/**
 * A user-defined event with a type name and opaque payload; Flink's "other" event (type id 3),
 * used for task events sent upstream with TaskEventRequest.
 */
export class TaskEvent {
  readonly kind = "TaskEvent" as const;
  constructor(
    /** Identifies the event class; written as a 2-byte-length modified-UTF-8 string. */
    readonly typeName: string,
    /** The event's own serialized form. */
    readonly payload: Uint8Array,
  ) {}
}

/**
 * Announces that `announcedEvent` (a timeoutable aligned barrier) was received as buffer
 * `sequenceNumber` of a channel. The input channel queues it with priority ahead of the data, so
 * the barrier handler can switch to an unaligned checkpoint before the barrier itself is read.
 */
export class EventAnnouncement {
  readonly kind = "EventAnnouncement" as const;
  constructor(
    /** The event announced; Flink only announces checkpoint barriers. */
    readonly announcedEvent: RuntimeEvent,
    /** The announced buffer's sequence number in its channel (int32). */
    readonly sequenceNumber: number,
  ) {}
}

/** Every event that can travel in a buffer of type EVENT_BUFFER / PRIORITIZED_EVENT_BUFFER. */
export type RuntimeEvent =
  | EndOfPartitionEvent
  | CheckpointBarrier
  | CancelCheckpointMarker
  | EndOfData
  | EndOfChannelStateEvent
  | TaskEvent
  | EventAnnouncement;
