/**
 * Wire constants of the Netty-style protocol (reference §2.1/§2.2). The numeric ids are Flink's
 * and are part of the protocol: never renumber, only append.
 */

/** Every frame starts with this int32 after the length field. */
export const MAGIC_NUMBER = 0xbadc0ffe;

/** int32 frame length (including itself) + int32 magic + int8 message id. */
export const FRAME_HEADER_LENGTH = 9;

/**
 * The fixed part of a BufferResponse body: receiverId 16, subpartitionId 4,
 * numberOfPartialBuffers 4, sequenceNumber 4, backlog 4, dataType 1, isCompressed 1, bufferSize 4.
 */
export const BUFFER_RESPONSE_FIXED_HEADER_LENGTH = 38;

/** Frame header + fixed BufferResponse header (partial sizes and payload follow). */
export const BUFFER_RESPONSE_HEADER_LENGTH =
  FRAME_HEADER_LENGTH + BUFFER_RESPONSE_FIXED_HEADER_LENGTH;

/** The largest frame length the int32 length field can express. */
export const MAX_WIRE_FRAME_LENGTH = 0x7fffffff;

/** Message ids (the int8 after the magic number). */
export const MessageId = {
  BUFFER_RESPONSE: 0,
  ERROR_RESPONSE: 1,
  PARTITION_REQUEST: 2,
  TASK_EVENT_REQUEST: 3,
  CANCEL_PARTITION_REQUEST: 4,
  CLOSE_REQUEST: 5,
  ADD_CREDIT: 6,
  RESUME_CONSUMPTION: 7,
  ACK_ALL_USER_RECORDS_PROCESSED: 8,
  BACKLOG_ANNOUNCEMENT: 9,
  NEW_BUFFER_SIZE: 10,
  SEGMENT_ID: 11,
} as const;

/** A valid message id. */
export type MessageId = (typeof MessageId)[keyof typeof MessageId];

const MESSAGE_NAMES: readonly string[] = [
  "BufferResponse",
  "ErrorResponse",
  "PartitionRequest",
  "TaskEventRequest",
  "CancelPartitionRequest",
  "CloseRequest",
  "AddCredit",
  "ResumeConsumption",
  "AckAllUserRecordsProcessed",
  "BacklogAnnouncement",
  "NewBufferSize",
  "SegmentId",
];

/** The message name for an id (for logs and errors); `unknown(<id>)` for anything else. */
export function messageName(id: number): string {
  return MESSAGE_NAMES[id] ?? `unknown(${id})`;
}

/** True for ids a client (consumer side) may receive: BufferResponse, ErrorResponse, BacklogAnnouncement. */
export function isClientBoundId(id: number): boolean {
  return id === 0 || id === 1 || id === 9;
}

/** True for ids a server (producer side) may receive: the requests 2–8, NewBufferSize, SegmentId. */
export function isServerBoundId(id: number): boolean {
  return (id >= 2 && id <= 8) || id === 10 || id === 11;
}
