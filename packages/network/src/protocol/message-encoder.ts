import {
  DataType,
  IllegalArgumentError,
  InputChannelID,
  isBufferType,
  MAX_DATA_TYPE,
} from "@sluice/core";
import { MAX_ERROR_MESSAGE_BYTES, MAX_ERROR_NAME_BYTES, utf8Capped } from "./error-response.js";
import {
  BUFFER_RESPONSE_HEADER_LENGTH,
  FRAME_HEADER_LENGTH,
  MAGIC_NUMBER,
  MAX_WIRE_FRAME_LENGTH,
  MessageId,
  messageName,
} from "./message-id.js";
import type { BufferResponse, BufferResponseHeader, NonBufferMessage } from "./netty-message.js";

const ID_BYTES = InputChannelID.BYTES; // 16
const RESULT_PARTITION_ID_BYTES = 60; // IRP-ID 20 + ExecutionAttemptID 40

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

function writeFrameHeader(target: Buffer, offset: number, frameLength: number, id: number): void {
  target.writeInt32BE(frameLength, offset);
  target.writeUInt32BE(MAGIC_NUMBER, offset + 4);
  target[offset + 8] = id;
}

/** Total frame length of a BufferResponse: 9 + 38 + 4 × partial buffers + payload bytes. */
export function bufferResponseFrameSize(
  numberOfPartialBuffers: number,
  bufferSize: number,
): number {
  return BUFFER_RESPONSE_HEADER_LENGTH + 4 * numberOfPartialBuffers + bufferSize;
}

/** Bytes of the BufferResponse header (everything but the payload): 9 + 38 + 4 × partial buffers. */
export function bufferResponseHeaderSize(numberOfPartialBuffers: number): number {
  return BUFFER_RESPONSE_HEADER_LENGTH + 4 * numberOfPartialBuffers;
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
  const headerLength = BUFFER_RESPONSE_HEADER_LENGTH + 4 * n;
  if (offset < 0 || offset + headerLength > target.length) {
    throw new IllegalArgumentError(
      `BufferResponse header of ${headerLength} bytes does not fit at ${offset} of ${target.length}`,
    );
  }
  let o = offset;
  writeFrameHeader(target, o, frameLength, MessageId.BUFFER_RESPONSE);
  o += FRAME_HEADER_LENGTH;
  header.receiverId.writeTo(target, o);
  o += ID_BYTES;
  target.writeInt32BE(header.subpartitionId, o);
  target.writeInt32BE(n, o + 4);
  target.writeInt32BE(header.sequenceNumber, o + 8);
  target.writeInt32BE(header.backlog, o + 12);
  target[o + 16] = dataType;
  target[o + 17] = header.isCompressed ? 1 : 0;
  target.writeInt32BE(size, o + 18);
  o += 22;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const partial = sizes[i] as number;
    checkInt("BufferResponse.partialBufferSizes[i]", partial, 1);
    sum += partial;
    target.writeInt32BE(partial, o);
    o += 4;
  }
  if (n > 0 && sum !== size) {
    throw new IllegalArgumentError(
      `BufferResponse: partial buffer sizes add up to ${sum}, not to bufferSize ${size}`,
    );
  }
  return headerLength;
}

/**
 * The header bytes of a BufferResponse (9 + 38 + 4n) in a new Buffer; the frame length in it
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
  const target = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + ID_BYTES);
  writeFrameHeader(target, 0, target.length, id);
  receiverId.writeTo(target, FRAME_HEADER_LENGTH);
  return target;
}

function frameWithIntAndReceiver(
  id: number,
  field: string,
  value: number,
  min: number,
  receiverId: InputChannelID,
): Buffer {
  checkInt(`${messageName(id)}.${field}`, value, min);
  checkReceiver(messageName(id), receiverId);
  const target = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + 4 + ID_BYTES);
  writeFrameHeader(target, 0, target.length, id);
  target.writeInt32BE(value, FRAME_HEADER_LENGTH);
  receiverId.writeTo(target, FRAME_HEADER_LENGTH + 4);
  return target;
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
      const frameLength =
        FRAME_HEADER_LENGTH +
        2 +
        2 +
        name.length +
        4 +
        text.length +
        1 +
        (receiverId === undefined ? 0 : ID_BYTES);
      const target = Buffer.allocUnsafe(frameLength);
      writeFrameHeader(target, 0, frameLength, MessageId.ERROR_RESPONSE);
      let o = FRAME_HEADER_LENGTH;
      target.writeInt16BE(msg.errorWireId, o);
      target.writeUInt16BE(name.length, o + 2);
      o += 4;
      name.copy(target, o);
      o += name.length;
      target.writeInt32BE(text.length, o);
      o += 4;
      text.copy(target, o);
      o += text.length;
      if (receiverId === undefined) {
        target[o] = 0;
      } else {
        target[o] = 1;
        receiverId.writeTo(target, o + 1);
      }
      return target;
    }
    case MessageId.PARTITION_REQUEST: {
      const { start, end } = msg.subpartitionIndexSet;
      checkInt("PartitionRequest.subpartitionIndexSet.start", start, 0);
      checkInt("PartitionRequest.subpartitionIndexSet.end", end, start);
      checkInt("PartitionRequest.credit", msg.credit, 0);
      checkReceiver("PartitionRequest", msg.receiverId);
      const target = Buffer.allocUnsafe(
        FRAME_HEADER_LENGTH + RESULT_PARTITION_ID_BYTES + 8 + ID_BYTES + 4,
      );
      writeFrameHeader(target, 0, target.length, MessageId.PARTITION_REQUEST);
      let o = FRAME_HEADER_LENGTH;
      msg.partitionId.writeTo(target, o);
      o += RESULT_PARTITION_ID_BYTES;
      target.writeInt32BE(start, o);
      target.writeInt32BE(end, o + 4);
      o += 8;
      msg.receiverId.writeTo(target, o);
      target.writeInt32BE(msg.credit, o + ID_BYTES);
      return target;
    }
    case MessageId.TASK_EVENT_REQUEST: {
      checkReceiver("TaskEventRequest", msg.receiverId);
      const event = msg.event;
      const frameLength =
        FRAME_HEADER_LENGTH + 4 + event.length + RESULT_PARTITION_ID_BYTES + ID_BYTES;
      if (frameLength > MAX_WIRE_FRAME_LENGTH) {
        throw new IllegalArgumentError(
          `TaskEventRequest frame of ${frameLength} bytes exceeds 2^31-1`,
        );
      }
      const target = Buffer.allocUnsafe(frameLength);
      writeFrameHeader(target, 0, frameLength, MessageId.TASK_EVENT_REQUEST);
      let o = FRAME_HEADER_LENGTH;
      target.writeInt32BE(event.length, o);
      o += 4;
      target.set(event, o);
      o += event.length;
      msg.partitionId.writeTo(target, o);
      msg.receiverId.writeTo(target, o + RESULT_PARTITION_ID_BYTES);
      return target;
    }
    case MessageId.CANCEL_PARTITION_REQUEST:
    case MessageId.RESUME_CONSUMPTION:
    case MessageId.ACK_ALL_USER_RECORDS_PROCESSED:
      return frameWithReceiver(msg.id, msg.receiverId);
    case MessageId.CLOSE_REQUEST: {
      const target = Buffer.allocUnsafe(FRAME_HEADER_LENGTH);
      writeFrameHeader(target, 0, FRAME_HEADER_LENGTH, MessageId.CLOSE_REQUEST);
      return target;
    }
    case MessageId.ADD_CREDIT:
      return frameWithIntAndReceiver(msg.id, "credit", msg.credit, 1, msg.receiverId);
    case MessageId.BACKLOG_ANNOUNCEMENT:
      return frameWithIntAndReceiver(msg.id, "backlog", msg.backlog, 1, msg.receiverId);
    case MessageId.NEW_BUFFER_SIZE:
      return frameWithIntAndReceiver(msg.id, "bufferSize", msg.bufferSize, 1, msg.receiverId);
    case MessageId.SEGMENT_ID: {
      checkInt("SegmentId.subpartitionId", msg.subpartitionId, 0);
      checkInt("SegmentId.segmentId", msg.segmentId, 1);
      checkReceiver("SegmentId", msg.receiverId);
      const target = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + 8 + ID_BYTES);
      writeFrameHeader(target, 0, target.length, MessageId.SEGMENT_ID);
      target.writeInt32BE(msg.subpartitionId, FRAME_HEADER_LENGTH);
      target.writeInt32BE(msg.segmentId, FRAME_HEADER_LENGTH + 4);
      msg.receiverId.writeTo(target, FRAME_HEADER_LENGTH + 8);
      return target;
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
