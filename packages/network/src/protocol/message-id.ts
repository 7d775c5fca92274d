/**
 * The message ids of the protocol (the int8 after the magic number; docs/protocol.md lists
 * them). The numbers are Flink's and part of the protocol: never renumber, only append. The
 * byte layouts of the messages live in `message-layout.ts`.
 */

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

const MESSAGE_NAMES: Readonly<Record<MessageId, string>> = {
  [MessageId.BUFFER_RESPONSE]: "BufferResponse",
  [MessageId.ERROR_RESPONSE]: "ErrorResponse",
  [MessageId.PARTITION_REQUEST]: "PartitionRequest",
  [MessageId.TASK_EVENT_REQUEST]: "TaskEventRequest",
  [MessageId.CANCEL_PARTITION_REQUEST]: "CancelPartitionRequest",
  [MessageId.CLOSE_REQUEST]: "CloseRequest",
  [MessageId.ADD_CREDIT]: "AddCredit",
  [MessageId.RESUME_CONSUMPTION]: "ResumeConsumption",
  [MessageId.ACK_ALL_USER_RECORDS_PROCESSED]: "AckAllUserRecordsProcessed",
  [MessageId.BACKLOG_ANNOUNCEMENT]: "BacklogAnnouncement",
  [MessageId.NEW_BUFFER_SIZE]: "NewBufferSize",
  [MessageId.SEGMENT_ID]: "SegmentId",
};

/** The messages a server (producer side) sends and a client (consumer side) receives. */
const CLIENT_BOUND: readonly MessageId[] = [
  MessageId.BUFFER_RESPONSE,
  MessageId.ERROR_RESPONSE,
  MessageId.BACKLOG_ANNOUNCEMENT,
];

/** Every other message: the requests a client sends to a server. */
const SERVER_BOUND: readonly MessageId[] = Object.values(MessageId).filter(
  (id) => !CLIENT_BOUND.includes(id),
);

/** `table[id]` is true for the ids in `ids`: a lookup cheap enough for every decoded frame. */
function lookup(ids: readonly MessageId[]): readonly boolean[] {
  const table: boolean[] = [];
  for (const id of ids) table[id] = true;
  return table;
}

const IS_CLIENT_BOUND = lookup(CLIENT_BOUND);
const IS_SERVER_BOUND = lookup(SERVER_BOUND);

/** The message name for an id (for logs and errors); `unknown(<id>)` for anything else. */
export function messageName(id: number): string {
  return MESSAGE_NAMES[id as MessageId] ?? `unknown(${id})`;
}

/** True for ids a client (consumer side) may receive: BufferResponse, ErrorResponse, BacklogAnnouncement. */
export function isClientBoundId(id: number): boolean {
  return IS_CLIENT_BOUND[id] === true;
}

/** True for ids a server (producer side) may receive: every request (PartitionRequest … SegmentId). */
export function isServerBoundId(id: number): boolean {
  return IS_SERVER_BOUND[id] === true;
}
