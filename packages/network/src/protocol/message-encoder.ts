import {
  DataType,
  IllegalArgumentError,
  type InputChannelID,
  isBufferType,
  MAX_DATA_TYPE,
} from "@sluice/core";
import { MAX_ERROR_MESSAGE_BYTES, MAX_ERROR_NAME_BYTES, utf8Capped } from "./error-response.js";
import { MessageId, messageName } from "./message-id.js";
import {
  ADD_CREDIT,
  BACKLOG_ANNOUNCEMENT,
  BUFFER_RESPONSE,
  bufferResponseFrameSize,
  bufferResponseHeaderSize,
  ERROR_RESPONSE,
  ERROR_RESPONSE_MESSAGE,
  ERROR_RESPONSE_RECEIVER,
  errorResponseBodySize,
  type FieldOffsets,
  FRAME_HEADER,
  MAGIC_NUMBER,
  MAX_WIRE_FRAME_LENGTH,
  NEW_BUFFER_SIZE,
  PARTIAL_BUFFER_SIZE_BYTES,
  PARTITION_REQUEST,
  RECEIVER_ONLY,
  SEGMENT_ID,
  TASK_EVENT_REQUEST,
  TASK_EVENT_REQUEST_TARGET,
  taskEventRequestBodySize,
} from "./message-layout.js";
import type { BufferResponse, BufferResponseHeader, NonBufferMessage } from "./netty-message.js";

function isInt32(value: number): boolean {
  return (value | 0) === value;
}

function checkInt(name: string, value: number, min: number): void {
  if (!isInt32(value) || value < min) {
    throw new IllegalArgumentError(`${name} must be an int32 >= ${min}, got ${String(value)}`);
  }
}

function checkReceiver(what: string, receiverId: unknown): void {
  // Duck-typed rather than instanceof: ids from another copy of @sluice/core are fine.
  if (typeof (receiverId as { writeTo?: unknown } | undefined)?.writeTo !== "function") {
    throw new IllegalArgumentError(`${what}: receiverId must be an InputChannelID`);
  }
}

/** Writes the frame header at `offset`; returns the offset of the body. */
function writeFrameHeader(target: Buffer, offset: number, frameLength: number, id: number): number {
  target.writeInt32BE(frameLength, offset + FRAME_HEADER.frameLength);
  target.writeUInt32BE(MAGIC_NUMBER, offset + FRAME_HEADER.magic);
  target[offset + FRAME_HEADER.messageId] = id;
  return offset + FRAME_HEADER.BYTES;
}

/** A new buffer holding exactly one frame of `bodyLength` body bytes, its header written. */
function allocateFrame(id: number, bodyLength: number): { frame: Buffer; body: number } {
  const frame = Buffer.allocUnsafe(FRAME_HEADER.BYTES + bodyLength);
  return { frame, body: writeFrameHeader(frame, 0, frame.length, id) };
}

/**
 * Writes the header of a BufferResponse (frame header, 38 fixed bytes, partial sizes) at
 * `offset` of `target`; its frame length counts the `bufferSize` payload bytes that the caller
 * writes right after it (writev of [header, payload view], no payload copy). Lets a transport
 * put the headers of several buffers into one allocation. Returns the number of bytes written.
 * Throws IllegalArgumentError for fields the decoder would reject.
 */
export function writeBufferResponseHeader(
  target: Buffer,
  offset: number,
  header: BufferResponseHeader,
): number {
  const sizes = header.partialBufferSizes;
  const n = sizes.length;
  const size = header.bufferSize;
  checkReceiver("BufferResponse", header.receiverId);
  checkInt("BufferResponse.subpartitionId", header.subpartitionId, 0);
  checkInt("BufferResponse.sequenceNumber", header.sequenceNumber, -0x80000000);
  checkInt("BufferResponse.backlog", header.backlog, 0);
  checkInt("BufferResponse.bufferSize", size, 0);
  const dataType = header.dataType;
  if (!Number.isInteger(dataType) || dataType <= DataType.NONE || dataType > MAX_DATA_TYPE) {
    throw new IllegalArgumentError(
      `BufferResponse.dataType must be in [1, ${MAX_DATA_TYPE}], got ${String(dataType)}`,
    );
  }
  if (header.isCompressed && !isBufferType(dataType)) {
    throw new IllegalArgumentError(`BufferResponse: ${DataType[dataType]} cannot be compressed`);
  }
  if (size === 0 && !isBufferType(dataType)) {
    throw new IllegalArgumentError(`BufferResponse: a ${DataType[dataType]} needs at least 1 byte`);
  }
  const frameLength = bufferResponseFrameSize(n, size);
  if (frameLength > MAX_WIRE_FRAME_LENGTH) {
    throw new IllegalArgumentError(`BufferResponse frame of ${frameLength} bytes exceeds 2^31-1`);
  }
  const headerLength = bufferResponseHeaderSize(n);
  if (offset < 0 || offset + headerLength > target.length) {
    throw new IllegalArgumentError(
      `BufferResponse header of ${headerLength} bytes does not fit at ${offset} of ${target.length}`,
    );
  }
  const body = writeFrameHeader(target, offset, frameLength, MessageId.BUFFER_RESPONSE);
  header.receiverId.writeTo(target, body + BUFFER_RESPONSE.receiverId);
  target.writeInt32BE(header.subpartitionId, body + BUFFER_RESPONSE.subpartitionId);
  target.writeInt32BE(n, body + BUFFER_RESPONSE.numberOfPartialBuffers);
  target.writeInt32BE(header.sequenceNumber, body + BUFFER_RESPONSE.sequenceNumber);
  target.writeInt32BE(header.backlog, body + BUFFER_RESPONSE.backlog);
  target[body + BUFFER_RESPONSE.dataType] = dataType;
  target[body + BUFFER_RESPONSE.isCompressed] = header.isCompressed ? 1 : 0;
  target.writeInt32BE(size, body + BUFFER_RESPONSE.bufferSize);
  let o = body + BUFFER_RESPONSE.BYTES;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const partial = sizes[i] as number;
    checkInt("BufferResponse.partialBufferSizes[i]", partial, 1);
    sum += partial;
    target.writeInt32BE(partial, o);
    o += PARTIAL_BUFFER_SIZE_BYTES;
  }
  if (n > 0 && sum !== size) {
    throw new IllegalArgumentError(
      `BufferResponse: partial buffer sizes add up to ${sum}, not to bufferSize ${size}`,
    );
  }
  return headerLength;
}

/**
 * The header bytes of a BufferResponse (47 + 4n) in a new Buffer; the frame length in it
 * accounts for the payload, which the transport writes next without copying it.
 */
export function encodeBufferResponseHeader(header: BufferResponseHeader): Buffer {
  const target = Buffer.allocUnsafe(bufferResponseHeaderSize(header.partialBufferSizes.length));
  writeBufferResponseHeader(target, 0, header);
  return target;
}

/**
 * A whole BufferResponse frame with the payload COPIED after the header (for tests and tools;
 * the hot path writes `encodeBufferResponseHeader` and the buffer's view instead). The payload is
 * the buffer's readable bytes, which must number `bufferSize`.
 */
export function encodeBufferResponse(msg: BufferResponse): Buffer {
  const payload = msg.buffer?.readableView();
  const payloadLength = payload?.length ?? 0;
  if (payloadLength !== msg.bufferSize) {
    throw new IllegalArgumentError(
      `BufferResponse.bufferSize ${msg.bufferSize} differs from the ${payloadLength} readable bytes of its buffer`,
    );
  }
  const headerLength = bufferResponseHeaderSize(msg.partialBufferSizes.length);
  const target = Buffer.allocUnsafe(headerLength + payloadLength);
  writeBufferResponseHeader(target, 0, msg);
  if (payload !== undefined) payload.copy(target, headerLength);
  return target;
}

function frameWithReceiver(id: number, receiverId: InputChannelID): Buffer {
  checkReceiver(messageName(id), receiverId);
  const { frame, body } = allocateFrame(id, RECEIVER_ONLY.BYTES);
  receiverId.writeTo(frame, body + RECEIVER_ONLY.receiverId);
  return frame;
}

/** AddCredit, BacklogAnnouncement and NewBufferSize: one int32 field and the receiver. */
function frameWithIntAndReceiver<Field extends string>(
  id: number,
  layout: FieldOffsets<Field | "receiverId">,
  field: Field,
  value: number,
  min: number,
  receiverId: InputChannelID,
): Buffer {
  checkInt(`${messageName(id)}.${field}`, value, min);
  checkReceiver(messageName(id), receiverId);
  const { frame, body } = allocateFrame(id, layout.BYTES);
  frame.writeInt32BE(value, body + layout[field]);
  receiverId.writeTo(frame, body + layout.receiverId);
  return frame;
}

/**
 * Encodes any message but BufferResponse into one Buffer of exactly its frame size (one
 * allocation). Throws IllegalArgumentError for a field the decoder would reject (AddCredit with
 * credit ≤ 0, a negative subpartition index, …) so an invalid frame never leaves this process.
 */
export function encodeMessage(msg: NonBufferMessage): Buffer {
  switch (msg.id) {
    case MessageId.ERROR_RESPONSE: {
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
    }
    case MessageId.PARTITION_REQUEST: {
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
    }
    case MessageId.TASK_EVENT_REQUEST: {
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
    }
    case MessageId.CANCEL_PARTITION_REQUEST:
    case MessageId.RESUME_CONSUMPTION:
    case MessageId.ACK_ALL_USER_RECORDS_PROCESSED:
      return frameWithReceiver(msg.id, msg.receiverId);
    case MessageId.CLOSE_REQUEST:
      return allocateFrame(MessageId.CLOSE_REQUEST, 0).frame;
    case MessageId.ADD_CREDIT:
      return frameWithIntAndReceiver(msg.id, ADD_CREDIT, "credit", msg.credit, 1, msg.receiverId);
    case MessageId.BACKLOG_ANNOUNCEMENT:
      return frameWithIntAndReceiver(
        msg.id,
        BACKLOG_ANNOUNCEMENT,
        "backlog",
        msg.backlog,
        1,
        msg.receiverId,
      );
    case MessageId.NEW_BUFFER_SIZE:
      return frameWithIntAndReceiver(
        msg.id,
        NEW_BUFFER_SIZE,
        "bufferSize",
        msg.bufferSize,
        1,
        msg.receiverId,
      );
    case MessageId.SEGMENT_ID: {
      checkInt("SegmentId.subpartitionId", msg.subpartitionId, 0);
      checkInt("SegmentId.segmentId", msg.segmentId, 1);
      checkReceiver("SegmentId", msg.receiverId);
      const { frame, body } = allocateFrame(MessageId.SEGMENT_ID, SEGMENT_ID.BYTES);
      frame.writeInt32BE(msg.subpartitionId, body + SEGMENT_ID.subpartitionId);
      frame.writeInt32BE(msg.segmentId, body + SEGMENT_ID.segmentId);
      msg.receiverId.writeTo(frame, body + SEGMENT_ID.receiverId);
      return frame;
    }
    default: {
      const id = (msg as { id: unknown }).id;
      throw new IllegalArgumentError(
        id === MessageId.BUFFER_RESPONSE
          ? "encodeMessage does not encode BufferResponse: use encodeBufferResponseHeader (no copy) or encodeBufferResponse"
          : `cannot encode a message with id ${String(id)}`,
      );
    }
  }
}
