import { InputChannelID, ResultPartitionID } from "@sluice/core";
import { MessageId } from "./message-id.js";

/**
 * The byte layout of every protocol message, in one place: the encoder writes and the decoder
 * reads each field at the offset named here (Flink keeps a message's `write` and `readFrom`
 * side by side for the same reason). All integers are big-endian; docs/protocol.md shows the
 * same layouts as tables.
 *
 * Offsets of a message body are counted from the first byte after the frame header (docs/protocol.md
 * counts from the frame's first byte: add `FRAME_HEADER.BYTES`).
 */

// Sizes of the fixed-width wire types.
const INT8_BYTES = 1;
const INT16_BYTES = 2;
const INT32_BYTES = 4;

/** An `InputChannelID` (the receiver of a message) on the wire. */
export const RECEIVER_ID_BYTES = InputChannelID.BYTES;
/** A `ResultPartitionID` on the wire. */
const PARTITION_ID_BYTES = ResultPartitionID.BYTES;

/** The offset of every field of a fixed run of fields, and the run's size in `BYTES`. */
export type FieldOffsets<Name extends string> = { readonly [K in Name]: number } & {
  readonly BYTES: number;
};

/**
 * Lays fields out back to back in the order given: each field's offset is the sum of the sizes
 * before it.
 */
function fields<const Sizes extends Readonly<Record<string, number>>>(
  sizes: Sizes,
): FieldOffsets<Extract<keyof Sizes, string>> {
  const offsets: Record<string, number> = {};
  let offset = 0;
  for (const [name, size] of Object.entries(sizes)) {
    offsets[name] = offset;
    offset += size;
  }
  offsets.BYTES = offset;
  return Object.freeze(offsets) as FieldOffsets<Extract<keyof Sizes, string>>;
}

/** Every frame starts with this int32 after the length field. */
export const MAGIC_NUMBER = 0xbadc0ffe;

/** The largest frame length the int32 length field can express. */
export const MAX_WIRE_FRAME_LENGTH = 0x7fffffff;

/** The frame header: the frame length (counting the header itself), the magic, the message id. */
export const FRAME_HEADER = fields({
  frameLength: INT32_BYTES,
  magic: INT32_BYTES,
  messageId: INT8_BYTES,
});

/**
 * BufferResponse (id 0): its fixed fields. Then `numberOfPartialBuffers` sizes of
 * `PARTIAL_BUFFER_SIZE_BYTES` each, then `bufferSize` payload bytes.
 */
export const BUFFER_RESPONSE = fields({
  receiverId: RECEIVER_ID_BYTES,
  subpartitionId: INT32_BYTES,
  numberOfPartialBuffers: INT32_BYTES,
  sequenceNumber: INT32_BYTES,
  backlog: INT32_BYTES,
  dataType: INT8_BYTES,
  isCompressed: INT8_BYTES,
  bufferSize: INT32_BYTES,
});

/** One partial buffer size of a BufferResponse (an int32). */
export const PARTIAL_BUFFER_SIZE_BYTES = INT32_BYTES;

/** Frame header + the fixed BufferResponse fields (the partial sizes and the payload follow). */
export const BUFFER_RESPONSE_HEADER_LENGTH = FRAME_HEADER.BYTES + BUFFER_RESPONSE.BYTES;

/** Bytes of a BufferResponse header (everything but the payload) with `n` partial buffers. */
export function bufferResponseHeaderSize(numberOfPartialBuffers: number): number {
  return BUFFER_RESPONSE_HEADER_LENGTH + PARTIAL_BUFFER_SIZE_BYTES * numberOfPartialBuffers;
}

/** Total frame length of a BufferResponse with `n` partial buffers and `bufferSize` payload bytes. */
export function bufferResponseFrameSize(
  numberOfPartialBuffers: number,
  bufferSize: number,
): number {
  return bufferResponseHeaderSize(numberOfPartialBuffers) + bufferSize;
}

/**
 * ErrorResponse (id 1), Sluice's own encoding: these fields, then `nameLength` UTF-8 bytes of the
 * error name; then {@link ERROR_RESPONSE_MESSAGE} (the message length) and that many UTF-8 bytes;
 * then {@link ERROR_RESPONSE_RECEIVER} (a flag, and the receiver when the flag is 1).
 */
export const ERROR_RESPONSE = fields({
  errorWireId: INT16_BYTES,
  nameLength: INT16_BYTES,
});

/** The part of an ErrorResponse between the name and the message text. */
export const ERROR_RESPONSE_MESSAGE = fields({ messageLength: INT32_BYTES });

/** The end of an ErrorResponse: `hasReceiver` (0 or 1), then the receiver when it is 1. */
export const ERROR_RESPONSE_RECEIVER = fields({ hasReceiver: INT8_BYTES });

/** Body bytes of an ErrorResponse with these name and message lengths. */
export function errorResponseBodySize(
  nameBytes: number,
  messageBytes: number,
  hasReceiver: boolean,
): number {
  return (
    ERROR_RESPONSE.BYTES +
    nameBytes +
    ERROR_RESPONSE_MESSAGE.BYTES +
    messageBytes +
    ERROR_RESPONSE_RECEIVER.BYTES +
    (hasReceiver ? RECEIVER_ID_BYTES : 0)
  );
}

/** PartitionRequest (id 2): fixed size. */
export const PARTITION_REQUEST = fields({
  partitionId: PARTITION_ID_BYTES,
  subpartitionIndexStart: INT32_BYTES,
  subpartitionIndexEnd: INT32_BYTES,
  receiverId: RECEIVER_ID_BYTES,
  credit: INT32_BYTES,
});

/** TaskEventRequest (id 3): the event length, then that many event bytes, then {@link TASK_EVENT_REQUEST_TARGET}. */
export const TASK_EVENT_REQUEST = fields({ eventLength: INT32_BYTES });

/** What follows the event bytes of a TaskEventRequest. */
export const TASK_EVENT_REQUEST_TARGET = fields({
  partitionId: PARTITION_ID_BYTES,
  receiverId: RECEIVER_ID_BYTES,
});

/** Body bytes of a TaskEventRequest carrying `eventBytes` bytes of event. */
export function taskEventRequestBodySize(eventBytes: number): number {
  return TASK_EVENT_REQUEST.BYTES + eventBytes + TASK_EVENT_REQUEST_TARGET.BYTES;
}

/** CancelPartitionRequest (id 4), ResumeConsumption (id 7), AckAllUserRecordsProcessed (id 8). */
export const RECEIVER_ONLY = fields({ receiverId: RECEIVER_ID_BYTES });

/** AddCredit (id 6). */
export const ADD_CREDIT = fields({ credit: INT32_BYTES, receiverId: RECEIVER_ID_BYTES });

/** BacklogAnnouncement (id 9). */
export const BACKLOG_ANNOUNCEMENT = fields({ backlog: INT32_BYTES, receiverId: RECEIVER_ID_BYTES });

/** NewBufferSize (id 10). */
export const NEW_BUFFER_SIZE = fields({ bufferSize: INT32_BYTES, receiverId: RECEIVER_ID_BYTES });

/** SegmentId (id 11). */
export const SEGMENT_ID = fields({
  subpartitionId: INT32_BYTES,
  segmentId: INT32_BYTES,
  receiverId: RECEIVER_ID_BYTES,
});

/**
 * The body length every non-buffer message must have, indexed by message id: `exact` bytes, or
 * at least `min` bytes for the variable-length ones (the parser checks the rest). The
 * BufferResponse has its own rule ({@link bufferResponseFrameSize}) and CloseRequest has no body.
 */
export const BODY_LENGTH: readonly { readonly exact: boolean; readonly bytes: number }[] = (() => {
  const exact = (bytes: number) => ({ exact: true, bytes });
  const atLeast = (bytes: number) => ({ exact: false, bytes });
  const rules: Record<MessageId, { readonly exact: boolean; readonly bytes: number }> = {
    [MessageId.BUFFER_RESPONSE]: atLeast(BUFFER_RESPONSE.BYTES),
    [MessageId.ERROR_RESPONSE]: atLeast(errorResponseBodySize(0, 0, false)),
    [MessageId.PARTITION_REQUEST]: exact(PARTITION_REQUEST.BYTES),
    [MessageId.TASK_EVENT_REQUEST]: atLeast(taskEventRequestBodySize(0)),
    [MessageId.CANCEL_PARTITION_REQUEST]: exact(RECEIVER_ONLY.BYTES),
    [MessageId.CLOSE_REQUEST]: exact(0),
    [MessageId.ADD_CREDIT]: exact(ADD_CREDIT.BYTES),
    [MessageId.RESUME_CONSUMPTION]: exact(RECEIVER_ONLY.BYTES),
    [MessageId.ACK_ALL_USER_RECORDS_PROCESSED]: exact(RECEIVER_ONLY.BYTES),
    [MessageId.BACKLOG_ANNOUNCEMENT]: exact(BACKLOG_ANNOUNCEMENT.BYTES),
    [MessageId.NEW_BUFFER_SIZE]: exact(NEW_BUFFER_SIZE.BYTES),
    [MessageId.SEGMENT_ID]: exact(SEGMENT_ID.BYTES),
  };
  const table: { readonly exact: boolean; readonly bytes: number }[] = [];
  for (const id of Object.values(MessageId)) table[id] = rules[id];
  return Object.freeze(table);
})();
