/**
 * The kind of content a buffer holds. The numeric value is the byte written on the wire in a
 * BufferResponse (Flink's `Buffer.DataType` ordinal), so the order is frozen: never reorder, only
 * append.
 */
export enum DataType {
  NONE = 0,
  DATA_BUFFER = 1,
  EVENT_BUFFER = 2,
  PRIORITIZED_EVENT_BUFFER = 3,
  ALIGNED_CHECKPOINT_BARRIER = 4,
  TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER = 5,
  RECOVERY_COMPLETION = 6,
  END_OF_SEGMENT = 7,
  DATA_BUFFER_WITH_CLEAR_END = 8,
  END_OF_DATA = 9,
  END_OF_PARTITION = 10,
  RECOVERY_METADATA = 11,
  ALIGNED_WATERMARK_EVENT = 12,
  UNALIGNED_WATERMARK_EVENT = 13,
}

/** The largest valid DataType wire value. */
export const MAX_DATA_TYPE: number = DataType.UNALIGNED_WATERMARK_EVENT;

/** True for types that carry record data (they consume credit and count in the backlog). */
export function isBufferType(type: DataType): boolean {
  return type === DataType.DATA_BUFFER || type === DataType.DATA_BUFFER_WITH_CLEAR_END;
}

/** True for types that carry a serialized event (credit-free, never compressed). */
export function isEventType(type: DataType): boolean {
  return type !== DataType.NONE && !isBufferType(type);
}

/** True for types that block the subpartition until the consumer resumes (aligned barriers). */
export function isBlockingUpstream(type: DataType): boolean {
  return (
    type === DataType.ALIGNED_CHECKPOINT_BARRIER ||
    type === DataType.TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER ||
    type === DataType.RECOVERY_COMPLETION ||
    type === DataType.ALIGNED_WATERMARK_EVENT
  );
}

/** True for types that overtake queued data (unaligned barriers). */
export function hasPriority(type: DataType): boolean {
  return type === DataType.PRIORITIZED_EVENT_BUFFER;
}

/**
 * True for types whose receiver announces them ahead of the data (Flink's
 * `requiresAnnouncement`): a timeoutable aligned barrier, so the barrier handler can switch to
 * an unaligned checkpoint before the barrier itself is read.
 */
export function requiresAnnouncement(type: DataType): boolean {
  return type === DataType.TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER;
}
