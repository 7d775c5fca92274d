import {
  IllegalArgumentError,
  type InputChannelID,
  type ProtocolError,
  ResultPartitionID,
} from "@sluice/core";
import { MAX_ERROR_MESSAGE_BYTES, MAX_ERROR_NAME_BYTES, utf8Capped } from "./error-response.js";
import { MessageId, messageName } from "./message-id.js";
import {
  ADD_CREDIT,
  BACKLOG_ANNOUNCEMENT,
  ERROR_RESPONSE,
  ERROR_RESPONSE_MESSAGE,
  ERROR_RESPONSE_RECEIVER,
  errorResponseBodySize,
  type FieldOffsets,
  FRAME_HEADER,
  MAX_WIRE_FRAME_LENGTH,
  NEW_BUFFER_SIZE,
  PARTITION_REQUEST,
  RECEIVER_ID_BYTES,
  RECEIVER_ONLY,
  SEGMENT_ID,
  TASK_EVENT_REQUEST,
  TASK_EVENT_REQUEST_TARGET,
  taskEventRequestBodySize,
} from "./message-layout.js";
import type {
  AckAllUserRecordsProcessed,
  AddCredit,
  BacklogAnnouncement,
  CancelPartitionRequest,
  CloseRequest,
  ErrorResponse,
  NewBufferSize,
  NonBufferMessage,
  PartitionRequest,
  ResumeConsumption,
  SegmentId,
  TaskEventRequest,
} from "./netty-message.js";
import { allocateFrame, checkInt, checkReceiver, hex } from "./wire-format.js";

/**
 * Every message but BufferResponse, each with its encoder and its decoder side by side (as
 * Flink's NettyMessage subclasses keep `write` and `readFrom` together), so the two cannot drift
 * apart: both read the field offsets of `message-layout.ts`. The encoder of each message lives
 * here and nowhere else; the streaming decoder only frames the bytes and calls `decode` with a
 * whole body whose length already passed the message's `BODY_LENGTH` rule.
 */

/** What a message's `decode` needs from the decoder that framed its body. */
export interface BodyReader {
  /** The InputChannelID at `at` of `src` (the decoder shares the instances of repeated ids). */
  receiverId(src: Buffer, at: number): InputChannelID;
  /** A ProtocolError naming `what` was wrong, the frame it was in and the receiver when known. */
  violation(what: string, receiverId?: InputChannelID, cause?: unknown): ProtocolError;
}

/** The encoder and decoder of one message. */
export interface MessageCodec<M extends NonBufferMessage> {
  /**
   * The whole frame of `msg` in one allocation of exactly its size. Throws IllegalArgumentError
   * for a field the decoder would reject.
   */
  encode(msg: M): Buffer;
  /** The message in the `length` body bytes at `at` of `src`; throws the reader's violations. */
  decode(src: Buffer, at: number, length: number, reader: BodyReader): M;
}

/**
 * Reads the receiver at `receiverAt` and the ResultPartitionID at `partitionAt` (the requests
 * name both): a field the partition id rejects (a negative partition number, subtask index or
 * attempt number) is a protocol error naming the receiver.
 */
function readTarget(
  src: Buffer,
  partitionAt: number,
  receiverAt: number,
  reader: BodyReader,
): { readonly partitionId: ResultPartitionID; readonly receiverId: InputChannelID } {
  const receiverId = reader.receiverId(src, receiverAt);
  try {
    return { partitionId: ResultPartitionID.readFrom(src, partitionAt), receiverId };
  } catch (error) {
    throw reader.violation(
      `invalid ResultPartitionID: ${(error as Error).message}`,
      receiverId,
      error,
    );
  }
}

const errorResponse: MessageCodec<ErrorResponse> = {
  encode(msg) {
    checkInt("ErrorResponse.errorWireId", msg.errorWireId, -0x8000);
    if (msg.errorWireId > 0x7fff) {
      throw new IllegalArgumentError(
        `ErrorResponse.errorWireId ${msg.errorWireId} is not an int16`,
      );
    }
    const receiverId = msg.receiverId;
    if (receiverId !== undefined) checkReceiver("ErrorResponse", receiverId);
    const name = utf8Capped(msg.errorName, MAX_ERROR_NAME_BYTES);
    const text = utf8Capped(msg.message, MAX_ERROR_MESSAGE_BYTES);
    const { frame, body } = allocateFrame(
      MessageId.ERROR_RESPONSE,
      errorResponseBodySize(name.length, text.length, receiverId !== undefined),
    );
    frame.writeInt16BE(msg.errorWireId, body + ERROR_RESPONSE.errorWireId);
    frame.writeUInt16BE(name.length, body + ERROR_RESPONSE.nameLength);
    const nameAt = body + ERROR_RESPONSE.BYTES;
    name.copy(frame, nameAt);
    const messageAt = nameAt + name.length;
    frame.writeInt32BE(text.length, messageAt + ERROR_RESPONSE_MESSAGE.messageLength);
    text.copy(frame, messageAt + ERROR_RESPONSE_MESSAGE.BYTES);
    const receiverAt = messageAt + ERROR_RESPONSE_MESSAGE.BYTES + text.length;
    frame[receiverAt + ERROR_RESPONSE_RECEIVER.hasReceiver] = receiverId === undefined ? 0 : 1;
    receiverId?.writeTo(frame, receiverAt + ERROR_RESPONSE_RECEIVER.BYTES);
    return frame;
  },
  decode(src, at, length, reader) {
    const errorWireId = src.readInt16BE(at + ERROR_RESPONSE.errorWireId);
    const nameLength = src.readUInt16BE(at + ERROR_RESPONSE.nameLength);
    if (errorResponseBodySize(nameLength, 0, false) > length) {
      throw reader.violation(
        `ErrorResponse name length ${nameLength} exceeds the body of ${length} bytes`,
      );
    }
    const nameStart = at + ERROR_RESPONSE.BYTES;
    const errorName = src.toString("utf8", nameStart, nameStart + nameLength);
    const messageAt = nameStart + nameLength;
    const messageLength = src.readInt32BE(messageAt + ERROR_RESPONSE_MESSAGE.messageLength);
    if (messageLength < 0 || errorResponseBodySize(nameLength, messageLength, false) > length) {
      throw reader.violation(
        `ErrorResponse message length ${messageLength} (${hex(messageLength, 8)}) does not fit the body of ${length} bytes`,
      );
    }
    const messageStart = messageAt + ERROR_RESPONSE_MESSAGE.BYTES;
    const message = src.toString("utf8", messageStart, messageStart + messageLength);
    const receiverAt = messageStart + messageLength;
    const hasReceiver = src[receiverAt + ERROR_RESPONSE_RECEIVER.hasReceiver] as number;
    const used = receiverAt + ERROR_RESPONSE_RECEIVER.BYTES - at;
    if (hasReceiver === 0) {
      if (used !== length) {
        throw reader.violation(
          `ErrorResponse without receiver has ${length - used} trailing bytes`,
        );
      }
      return {
        id: MessageId.ERROR_RESPONSE,
        errorWireId,
        errorName,
        message,
        receiverId: undefined,
      };
    }
    if (hasReceiver !== 1) {
      throw reader.violation(
        `ErrorResponse hasReceiver byte ${hex(hasReceiver, 2)} is neither 0 nor 1`,
      );
    }
    if (used + RECEIVER_ID_BYTES !== length) {
      throw reader.violation(
        `ErrorResponse with receiver needs ${used + RECEIVER_ID_BYTES} body bytes, the frame has ${length}`,
      );
    }
    const receiverId = reader.receiverId(src, receiverAt + ERROR_RESPONSE_RECEIVER.BYTES);
    return { id: MessageId.ERROR_RESPONSE, errorWireId, errorName, message, receiverId };
  },
};

const partitionRequest: MessageCodec<PartitionRequest> = {
  encode(msg) {
    const { start, end } = msg.subpartitionIndexSet;
    checkInt("PartitionRequest.subpartitionIndexSet.start", start, 0);
    checkInt("PartitionRequest.subpartitionIndexSet.end", end, start);
    checkInt("PartitionRequest.credit", msg.credit, 0);
    checkReceiver("PartitionRequest", msg.receiverId);
    const { frame, body } = allocateFrame(MessageId.PARTITION_REQUEST, PARTITION_REQUEST.BYTES);
    msg.partitionId.writeTo(frame, body + PARTITION_REQUEST.partitionId);
    frame.writeInt32BE(start, body + PARTITION_REQUEST.subpartitionIndexStart);
    frame.writeInt32BE(end, body + PARTITION_REQUEST.subpartitionIndexEnd);
    msg.receiverId.writeTo(frame, body + PARTITION_REQUEST.receiverId);
    frame.writeInt32BE(msg.credit, body + PARTITION_REQUEST.credit);
    return frame;
  },
  decode(src, at, _length, reader) {
    const { partitionId, receiverId } = readTarget(
      src,
      at + PARTITION_REQUEST.partitionId,
      at + PARTITION_REQUEST.receiverId,
      reader,
    );
    const start = src.readInt32BE(at + PARTITION_REQUEST.subpartitionIndexStart);
    const end = src.readInt32BE(at + PARTITION_REQUEST.subpartitionIndexEnd);
    const credit = src.readInt32BE(at + PARTITION_REQUEST.credit);
    if (start < 0 || end < start) {
      throw reader.violation(
        `subpartition index set [${start}, ${end}] is not a valid range`,
        receiverId,
      );
    }
    if (credit < 0) throw reader.violation(`negative initial credit ${credit}`, receiverId);
    return {
      id: MessageId.PARTITION_REQUEST,
      partitionId,
      subpartitionIndexSet: { start, end },
      receiverId,
      credit,
    };
  },
};

const taskEventRequest: MessageCodec<TaskEventRequest> = {
  encode(msg) {
    checkReceiver("TaskEventRequest", msg.receiverId);
    const event = msg.event;
    const bodyLength = taskEventRequestBodySize(event.length);
    if (FRAME_HEADER.BYTES + bodyLength > MAX_WIRE_FRAME_LENGTH) {
      throw new IllegalArgumentError(
        `TaskEventRequest frame of ${FRAME_HEADER.BYTES + bodyLength} bytes exceeds 2^31-1`,
      );
    }
    const { frame, body } = allocateFrame(MessageId.TASK_EVENT_REQUEST, bodyLength);
    frame.writeInt32BE(event.length, body + TASK_EVENT_REQUEST.eventLength);
    frame.set(event, body + TASK_EVENT_REQUEST.BYTES);
    const targetAt = body + TASK_EVENT_REQUEST.BYTES + event.length;
    msg.partitionId.writeTo(frame, targetAt + TASK_EVENT_REQUEST_TARGET.partitionId);
    msg.receiverId.writeTo(frame, targetAt + TASK_EVENT_REQUEST_TARGET.receiverId);
    return frame;
  },
  decode(src, at, length, reader) {
    const eventLength = src.readInt32BE(at + TASK_EVENT_REQUEST.eventLength);
    if (eventLength < 0 || taskEventRequestBodySize(eventLength) !== length) {
      throw reader.violation(
        `event length ${eventLength} (${hex(eventLength, 8)}) does not match the body of ${length} bytes (expected ${length - taskEventRequestBodySize(0)})`,
      );
    }
    const eventAt = at + TASK_EVENT_REQUEST.BYTES;
    const targetAt = eventAt + eventLength;
    const { partitionId, receiverId } = readTarget(
      src,
      targetAt + TASK_EVENT_REQUEST_TARGET.partitionId,
      targetAt + TASK_EVENT_REQUEST_TARGET.receiverId,
      reader,
    );
    // Copy: `src` may be the reused accumulation buffer or a socket chunk.
    const event = new Uint8Array(src.subarray(eventAt, targetAt));
    return { id: MessageId.TASK_EVENT_REQUEST, event, partitionId, receiverId };
  },
};

/** CancelPartitionRequest, ResumeConsumption and AckAllUserRecordsProcessed: the receiver only. */
function receiverOnly<
  M extends CancelPartitionRequest | ResumeConsumption | AckAllUserRecordsProcessed,
>(id: M["id"]): MessageCodec<M> {
  return {
    encode(msg) {
      checkReceiver(messageName(id), msg.receiverId);
      const { frame, body } = allocateFrame(id, RECEIVER_ONLY.BYTES);
      msg.receiverId.writeTo(frame, body + RECEIVER_ONLY.receiverId);
      return frame;
    },
    decode(src, at, _length, reader) {
      return { id, receiverId: reader.receiverId(src, at + RECEIVER_ONLY.receiverId) } as M;
    },
  };
}

const closeRequest: MessageCodec<CloseRequest> = {
  encode: () => allocateFrame(MessageId.CLOSE_REQUEST, 0).frame,
  decode: () => ({ id: MessageId.CLOSE_REQUEST }),
};

/**
 * AddCredit, BacklogAnnouncement and NewBufferSize: one int32 field that must be > 0, and the
 * receiver.
 */
function positiveIntAndReceiver<
  M extends AddCredit | BacklogAnnouncement | NewBufferSize,
  Field extends Exclude<keyof M, "id" | "receiverId"> & string,
>(
  id: M["id"],
  layout: FieldOffsets<Field | "receiverId">,
  field: Field,
  create: (value: number, receiverId: InputChannelID) => M,
): MessageCodec<M> {
  const name = messageName(id);
  return {
    encode(msg) {
      const value = msg[field] as number;
      checkInt(`${name}.${field}`, value, 1);
      checkReceiver(name, msg.receiverId);
      const { frame, body } = allocateFrame(id, layout.BYTES);
      frame.writeInt32BE(value, body + layout[field]);
      msg.receiverId.writeTo(frame, body + layout.receiverId);
      return frame;
    },
    decode(src, at, _length, reader) {
      const value = src.readInt32BE(at + layout[field]);
      const receiverId = reader.receiverId(src, at + layout.receiverId);
      if (value <= 0) throw reader.violation(`${name} ${field} ${value} is not > 0`, receiverId);
      return create(value, receiverId);
    },
  };
}

const segmentId: MessageCodec<SegmentId> = {
  encode(msg) {
    checkInt("SegmentId.subpartitionId", msg.subpartitionId, 0);
    checkInt("SegmentId.segmentId", msg.segmentId, 1);
    checkReceiver("SegmentId", msg.receiverId);
    const { frame, body } = allocateFrame(MessageId.SEGMENT_ID, SEGMENT_ID.BYTES);
    frame.writeInt32BE(msg.subpartitionId, body + SEGMENT_ID.subpartitionId);
    frame.writeInt32BE(msg.segmentId, body + SEGMENT_ID.segmentId);
    msg.receiverId.writeTo(frame, body + SEGMENT_ID.receiverId);
    return frame;
  },
  decode(src, at, _length, reader) {
    const subpartitionId = src.readInt32BE(at + SEGMENT_ID.subpartitionId);
    const segmentId = src.readInt32BE(at + SEGMENT_ID.segmentId);
    const receiverId = reader.receiverId(src, at + SEGMENT_ID.receiverId);
    if (subpartitionId < 0) {
      throw reader.violation(`SegmentId subpartitionId ${subpartitionId} is negative`, receiverId);
    }
    if (segmentId <= 0) {
      throw reader.violation(`SegmentId segmentId ${segmentId} is not > 0`, receiverId);
    }
    return { id: MessageId.SEGMENT_ID, subpartitionId, segmentId, receiverId };
  },
};

type CodecTable = { readonly [M in NonBufferMessage as M["id"]]: MessageCodec<M> };

const CODECS: CodecTable = {
  [MessageId.ERROR_RESPONSE]: errorResponse,
  [MessageId.PARTITION_REQUEST]: partitionRequest,
  [MessageId.TASK_EVENT_REQUEST]: taskEventRequest,
  [MessageId.CANCEL_PARTITION_REQUEST]: receiverOnly(MessageId.CANCEL_PARTITION_REQUEST),
  [MessageId.CLOSE_REQUEST]: closeRequest,
  [MessageId.ADD_CREDIT]: positiveIntAndReceiver(
    MessageId.ADD_CREDIT,
    ADD_CREDIT,
    "credit",
    (credit, receiverId) => ({ id: MessageId.ADD_CREDIT, credit, receiverId }),
  ),
  [MessageId.RESUME_CONSUMPTION]: receiverOnly(MessageId.RESUME_CONSUMPTION),
  [MessageId.ACK_ALL_USER_RECORDS_PROCESSED]: receiverOnly(
    MessageId.ACK_ALL_USER_RECORDS_PROCESSED,
  ),
  [MessageId.BACKLOG_ANNOUNCEMENT]: positiveIntAndReceiver(
    MessageId.BACKLOG_ANNOUNCEMENT,
    BACKLOG_ANNOUNCEMENT,
    "backlog",
    (backlog, receiverId) => ({ id: MessageId.BACKLOG_ANNOUNCEMENT, backlog, receiverId }),
  ),
  [MessageId.NEW_BUFFER_SIZE]: positiveIntAndReceiver(
    MessageId.NEW_BUFFER_SIZE,
    NEW_BUFFER_SIZE,
    "bufferSize",
    (bufferSize, receiverId) => ({ id: MessageId.NEW_BUFFER_SIZE, bufferSize, receiverId }),
  ),
  [MessageId.SEGMENT_ID]: segmentId,
};

/** The codecs indexed by message id: one array read per frame on the decoding hot path. */
const BY_ID: readonly (MessageCodec<NonBufferMessage> | undefined)[] = (() => {
  const table: (MessageCodec<NonBufferMessage> | undefined)[] = [];
  for (const [id, codec] of Object.entries(CODECS)) table[Number(id)] = codec;
  return Object.freeze(table);
})();

/** The codec of message id `id`; undefined for BufferResponse and for unknown ids. */
export function nonBufferCodecOf(id: number): MessageCodec<NonBufferMessage> | undefined {
  return BY_ID[id];
}
