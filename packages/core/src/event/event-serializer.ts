import { IllegalArgumentError, SerializationError } from "../errors.js";
import { BufferConsumer } from "../memory/buffer-consumer.js";
import { FreeingBufferRecycler } from "../memory/buffer-recycler.js";
import { DataType } from "../memory/data-type.js";
import { MemorySegment } from "../memory/memory-segment.js";
import { NetworkBuffer } from "../memory/network-buffer.js";
import { DataInputDeserializer } from "../serialization/data-input-deserializer.js";
import { DataOutputSerializer } from "../serialization/data-output-serializer.js";
import {
  CancelCheckpointMarker,
  CheckpointAlignment,
  CheckpointBarrier,
  type CheckpointOptions,
  EndOfChannelStateEvent,
  EndOfData,
  EndOfPartitionEvent,
  EventAnnouncement,
  type RuntimeEvent,
  SnapshotType,
  StopMode,
  TaskEvent,
} from "./runtime-event.js";

/**
 * Flink's event type ids (those of its EventSerializer): the int32 every serialized event starts
 * with. Part of
 * the format: never renumber. Ids without a Sluice event class are listed so that errors can name
 * them; decoding them fails.
 */
export const EventTypeIds = Object.freeze({
  END_OF_PARTITION: 0,
  CHECKPOINT_BARRIER: 1,
  END_OF_SUPERSTEP: 2,
  OTHER: 3,
  CANCEL_CHECKPOINT_MARKER: 4,
  END_OF_CHANNEL_STATE: 5,
  ANNOUNCEMENT: 6,
  VIRTUAL_CHANNEL_SELECTOR: 7,
  END_OF_DATA: 8,
  END_OF_SEGMENT: 9,
  RECOVERY_METADATA: 10,
  WATERMARK: 11,
} as const);

const TYPE_NAMES: Readonly<Record<number, string>> = {
  0: "EndOfPartitionEvent",
  1: "CheckpointBarrier",
  2: "EndOfSuperstepEvent",
  3: "TaskEvent (other)",
  4: "CancelCheckpointMarker",
  5: "EndOfChannelStateEvent",
  6: "EventAnnouncement",
  7: "SubtaskConnectionDescriptor",
  8: "EndOfData",
  9: "EndOfSegmentEvent",
  10: "RecoveryMetadata",
  11: "WatermarkEvent",
};

const MIN_INT64 = -(2n ** 63n);
const MAX_INT64 = 2n ** 63n - 1n;
/** Flink's "no aligned checkpoint timeout" (Long.MAX_VALUE); Sluice's default uses 0. */
const NO_ALIGNED_CHECKPOINT_TIMEOUT = MAX_INT64;
/** Bytes of a barrier without location bytes and without the savepoint-format byte. */
const BARRIER_BASE_SIZE = 4 + 8 + 8 + 1 + 4 + 1 + 8;

function isSavepoint(type: SnapshotType): boolean {
  return (
    type === SnapshotType.SAVEPOINT ||
    type === SnapshotType.SAVEPOINT_SUSPEND ||
    type === SnapshotType.SAVEPOINT_TERMINATE
  );
}

/**
 * Flink's CheckpointOptions.needsAlignment: exactly-once, and aligned or a savepoint. Such a
 * barrier is sent as a blocking data type: its subpartition sends nothing more until the
 * consumer resumes it.
 */
export function needsAlignment(options: CheckpointOptions): boolean {
  return (
    options.alignment !== CheckpointAlignment.AT_LEAST_ONCE &&
    (isSavepoint(options.snapshotType) || options.alignment !== CheckpointAlignment.UNALIGNED)
  );
}

/**
 * Flink's CheckpointOptions.isTimeoutable: an aligned barrier with a real timeout (neither 0 nor
 * 2⁶³−1, "never"). It may turn unaligned once `alignedCheckpointTimeout` ms passed since the
 * checkpoint was created, so it travels as TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER and its
 * receiver announces it ahead of the data.
 */
export function isTimeoutable(options: CheckpointOptions): boolean {
  return (
    options.alignment === CheckpointAlignment.ALIGNED &&
    options.alignedCheckpointTimeout > 0n &&
    options.alignedCheckpointTimeout !== NO_ALIGNED_CHECKPOINT_TIMEOUT
  );
}

/**
 * Flink's CheckpointOptions.isUnalignedCheckpoint: the barrier overtakes in-flight data (it is
 * sent as a priority event) and that data is persisted as channel state.
 */
export function isUnalignedCheckpoint(options: CheckpointOptions): boolean {
  return options.alignment === CheckpointAlignment.UNALIGNED;
}

function checkInt64(value: unknown, what: string): bigint {
  if (typeof value !== "bigint" || value < MIN_INT64 || value > MAX_INT64) {
    throw new IllegalArgumentError(
      `${what} must be a bigint in [-2^63, 2^63 - 1], got ${String(value)}`,
    );
  }
  return value;
}

function checkByteEnum(value: unknown, max: number, what: string): number {
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > max) {
    throw new IllegalArgumentError(
      `${what} must be an integer in [0, ${max}], got ${String(value)}`,
    );
  }
  return value as number;
}

// ------------------------------------------------------------------------------------ writing

function writeBarrier(barrier: CheckpointBarrier, out: DataOutputSerializer): void {
  const options = barrier.options;
  out.writeInt(EventTypeIds.CHECKPOINT_BARRIER);
  out.writeLong(checkInt64(barrier.id, "checkpoint id"));
  out.writeLong(checkInt64(barrier.timestamp, "checkpoint timestamp"));
  const snapshotType = checkByteEnum(
    options.snapshotType,
    SnapshotType.FULL_CHECKPOINT,
    "snapshot type",
  );
  out.writeByte(snapshotType);
  if (isSavepoint(snapshotType)) {
    // A savepoint without an explicit format is canonical, Flink's default.
    out.writeByte(checkByteEnum(options.savepointFormat ?? 0, 1, "savepoint format"));
  }
  const location = options.targetLocation;
  if (location === null) {
    out.writeInt(-1);
  } else {
    if (!(location instanceof Uint8Array)) {
      throw new IllegalArgumentError("checkpoint target location must be a Uint8Array or null");
    }
    out.writeInt(location.length);
    out.writeBytes(location);
  }
  out.writeByte(checkByteEnum(options.alignment, CheckpointAlignment.FORCED_ALIGNED, "alignment"));
  out.writeLong(checkInt64(options.alignedCheckpointTimeout, "aligned checkpoint timeout"));
}

function writeEvent(event: RuntimeEvent, out: DataOutputSerializer): void {
  switch (event?.kind) {
    case "EndOfPartition":
      out.writeInt(EventTypeIds.END_OF_PARTITION);
      return;
    case "CheckpointBarrier":
      writeBarrier(event, out);
      return;
    case "TaskEvent":
      if (typeof event.typeName !== "string" || !(event.payload instanceof Uint8Array)) {
        throw new IllegalArgumentError(
          "a TaskEvent needs a string typeName and a Uint8Array payload",
        );
      }
      out.writeInt(EventTypeIds.OTHER);
      out.writeUTF(event.typeName);
      out.writeBytes(event.payload);
      return;
    case "CancelCheckpointMarker":
      out.writeInt(EventTypeIds.CANCEL_CHECKPOINT_MARKER);
      out.writeLong(checkInt64(event.checkpointId, "checkpoint id"));
      return;
    case "EndOfChannelState":
      out.writeInt(EventTypeIds.END_OF_CHANNEL_STATE);
      return;
    case "EventAnnouncement": {
      const seq = event.sequenceNumber;
      if (!Number.isInteger(seq) || seq < -0x8000_0000 || seq > 0x7fff_ffff) {
        throw new IllegalArgumentError(`announcement sequence number must be an int32, got ${seq}`);
      }
      out.writeInt(EventTypeIds.ANNOUNCEMENT);
      out.writeInt(seq);
      writeEvent(event.announcedEvent, out);
      return;
    }
    case "EndOfData":
      out.writeInt(EventTypeIds.END_OF_DATA);
      out.writeByte(checkByteEnum(event.stopMode, StopMode.NO_DRAIN, "stop mode"));
      return;
    default:
      throw new IllegalArgumentError(
        `not a serializable runtime event: ${String((event as { kind?: unknown } | null)?.kind ?? event)}`,
      );
  }
}

// ------------------------------------------------------------------------------------ reading

function readBarrier(input: DataInputDeserializer): CheckpointBarrier {
  const id = input.readLong();
  const timestamp = input.readLong();
  const snapshotType = input.readUnsignedByte();
  if (snapshotType > SnapshotType.FULL_CHECKPOINT) {
    throw new SerializationError(
      `unknown snapshot type ${snapshotType} at position ${input.position - 1}`,
    );
  }
  let savepointFormat: 0 | 1 | undefined;
  if (isSavepoint(snapshotType)) {
    const format = input.readUnsignedByte();
    if (format > 1) {
      throw new SerializationError(
        `unknown savepoint format ${format} at position ${input.position - 1}`,
      );
    }
    savepointFormat = format as 0 | 1;
  }
  const locationLength = input.readInt();
  let targetLocation: Uint8Array | null = null;
  if (locationLength !== -1) {
    if (locationLength < 0) {
      throw new SerializationError(
        `negative location length ${locationLength} at position ${input.position - 4}`,
      );
    }
    targetLocation = new Uint8Array(input.readFully(locationLength));
  }
  const alignment = input.readUnsignedByte();
  if (alignment > CheckpointAlignment.FORCED_ALIGNED) {
    throw new SerializationError(
      `unknown alignment ${alignment} at position ${input.position - 1}`,
    );
  }
  const alignedCheckpointTimeout = input.readLong();
  const options: CheckpointOptions =
    savepointFormat === undefined
      ? { snapshotType, targetLocation, alignment, alignedCheckpointTimeout }
      : { snapshotType, savepointFormat, targetLocation, alignment, alignedCheckpointTimeout };
  return new CheckpointBarrier(id, timestamp, Object.freeze(options));
}

function readEvent(typeId: number, input: DataInputDeserializer): RuntimeEvent {
  switch (typeId) {
    case EventTypeIds.END_OF_PARTITION:
      return EndOfPartitionEvent.INSTANCE;
    case EventTypeIds.CHECKPOINT_BARRIER:
      return readBarrier(input);
    case EventTypeIds.OTHER: {
      const typeName = input.readUTF();
      return new TaskEvent(typeName, new Uint8Array(input.readFully(input.available())));
    }
    case EventTypeIds.CANCEL_CHECKPOINT_MARKER:
      return new CancelCheckpointMarker(input.readLong());
    case EventTypeIds.END_OF_CHANNEL_STATE:
      return EndOfChannelStateEvent.INSTANCE;
    case EventTypeIds.ANNOUNCEMENT: {
      const sequenceNumber = input.readInt();
      const nested = fromSerializedEvent(input.readFully(input.available()));
      return new EventAnnouncement(nested, sequenceNumber);
    }
    case EventTypeIds.END_OF_DATA: {
      const stopMode = input.readUnsignedByte();
      if (stopMode > StopMode.NO_DRAIN) {
        throw new SerializationError(
          `unknown stop mode ${stopMode} at position ${input.position - 1}`,
        );
      }
      return new EndOfData(stopMode);
    }
    default: {
      const name = TYPE_NAMES[typeId];
      throw new SerializationError(
        name === undefined
          ? `unknown event type id ${typeId}`
          : `event type id ${typeId} (${name}) is not supported by Sluice`,
      );
    }
  }
}

// ------------------------------------------------------------------------------------ the API

/**
 * Serializes `event` in Flink's layout: an int32 type id, then the event's fields,
 * big-endian. Returns exactly the event's bytes (a fresh array). A plain aligned
 * {@link CheckpointBarrier} to the default location is 34 bytes; {@link EndOfPartitionEvent} is
 * `00 00 00 00`. Invalid fields (a non-int64 id, an unknown enum value) throw
 * {@link IllegalArgumentError}.
 */
function toSerializedEvent(event: RuntimeEvent): Uint8Array {
  const out = new DataOutputSerializer({ initialCapacity: BARRIER_BASE_SIZE + 1 });
  writeEvent(event, out);
  return out.copyOfBuffer();
}

/**
 * Decodes an event written by {@link toSerializedEvent}. Values that refer to bytes (a barrier's
 * location, a task event's payload) are copied, so `bytes` may be recycled afterwards. An unknown
 * type id, a truncated event, trailing bytes or an out-of-range field throw
 * {@link SerializationError} naming the type id and the byte counts.
 */
function fromSerializedEvent(bytes: Uint8Array): RuntimeEvent {
  if (bytes.length < 4) {
    throw new SerializationError(
      `an event starts with a 4-byte type id, but only ${bytes.length} bytes were given`,
    );
  }
  const input = new DataInputDeserializer(bytes);
  const typeId = input.readInt();
  const name = TYPE_NAMES[typeId] ?? "unknown";
  let event: RuntimeEvent;
  try {
    event = readEvent(typeId, input);
  } catch (error) {
    if (!(error instanceof SerializationError)) throw error;
    throw new SerializationError(
      `cannot decode a ${bytes.length}-byte event with type id ${typeId} (${name}): ${error.message}`,
      { cause: error },
    );
  }
  if (input.available() !== 0) {
    throw new SerializationError(
      `event type id ${typeId} (${name}) has ${input.available()} unexpected trailing bytes ` +
        `(${bytes.length} bytes in all)`,
    );
  }
  return event;
}

/**
 * The buffer data type Flink gives an event (its `EventSerializer.getDataType`):
 * - `hasPriority` → PRIORITIZED_EVENT_BUFFER (an unaligned barrier overtaking data);
 * - {@link EndOfData} → END_OF_DATA;
 * - a {@link CheckpointBarrier} that needs alignment (exactly-once, and aligned or a savepoint) →
 *   TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER if its alignment is ALIGNED with a timeout that is
 *   neither 0 nor 2⁶³−1 ("never"), else ALIGNED_CHECKPOINT_BARRIER — both block the subpartition
 *   until the consumer resumes it;
 * - everything else (EndOfPartition, cancel markers, at-least-once and unaligned barriers sent
 *   without priority, task events, announcements, EndOfChannelState) → EVENT_BUFFER.
 */
function dataTypeOf(event: RuntimeEvent, hasPriority: boolean): DataType {
  if (hasPriority) return DataType.PRIORITIZED_EVENT_BUFFER;
  if (event.kind === "EndOfData") return DataType.END_OF_DATA;
  if (event.kind === "CheckpointBarrier" && needsAlignment(event.options)) {
    return isTimeoutable(event.options)
      ? DataType.TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER
      : DataType.ALIGNED_CHECKPOINT_BARRIER;
  }
  return DataType.EVENT_BUFFER;
}

/**
 * Serializes `event` into an exact-size unpooled buffer (no credit, no pool: events must never
 * wait for memory) with the data type of {@link dataTypeOf}. Recycling it frees nothing but the
 * reference; the memory is left to the garbage collector.
 */
function toBuffer(event: RuntimeEvent, hasPriority = false): NetworkBuffer {
  const out = new DataOutputSerializer({ initialCapacity: BARRIER_BASE_SIZE + 1 });
  writeEvent(event, out);
  const size = out.length;
  const segment = MemorySegment.allocateUnpooled(size);
  segment.memory.set(out.getSharedBuffer());
  return new NetworkBuffer(segment, FreeingBufferRecycler, dataTypeOf(event, hasPriority), size);
}

/** {@link toBuffer} wrapped in a finished BufferConsumer, for adding to a subpartition's queue. */
function toBufferConsumer(event: RuntimeEvent, hasPriority = false): BufferConsumer {
  return BufferConsumer.fromFinishedBuffer(toBuffer(event, hasPriority));
}

/**
 * Decodes the event in `buffer`'s readable bytes. Does not recycle `buffer`: the caller still
 * owns its reference (the event holds no view of it).
 */
function fromBuffer(buffer: NetworkBuffer): RuntimeEvent {
  return fromSerializedEvent(buffer.readableView());
}

/**
 * Flink's EventSerializer: runtime events to and from bytes and buffers, in Flink's type ids and
 * byte layouts (an int32 type id, then the event's fields, big-endian).
 */
export const EventSerializer = Object.freeze({
  toSerializedEvent,
  fromSerializedEvent,
  dataTypeOf,
  toBuffer,
  toBufferConsumer,
  fromBuffer,
});
