import { DataType, IllegalArgumentError, isBufferType, MAX_DATA_TYPE } from "@sluice/core";
import { MessageId } from "./message-id.js";
import {
  BUFFER_RESPONSE,
  bufferResponseFrameSize,
  bufferResponseHeaderSize,
  MAX_WIRE_FRAME_LENGTH,
  PARTIAL_BUFFER_SIZE_BYTES,
} from "./message-layout.js";
import type { BufferResponse, BufferResponseHeader, NonBufferMessage } from "./netty-message.js";
import { nonBufferCodecOf } from "./non-buffer-message-codecs.js";
import { checkInt, checkReceiver, writeFrameHeader } from "./wire-format.js";

/**
 * Writes the header of a BufferResponse (frame header, fixed fields, partial sizes) at
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
 * The header bytes of a BufferResponse (`bufferResponseHeaderSize(n)`) in a new Buffer; the frame length in it
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

/**
 * Encodes any message but BufferResponse into one Buffer of exactly its frame size (one
 * allocation). Throws IllegalArgumentError for a field the decoder would reject (AddCredit with
 * credit ≤ 0, a negative subpartition index, …) so an invalid frame never leaves this process.
 */
export function encodeMessage(msg: NonBufferMessage): Buffer {
  const id = (msg as { id: unknown }).id;
  const codec = typeof id === "number" ? nonBufferCodecOf(id) : undefined;
  if (codec === undefined) {
    throw new IllegalArgumentError(
      id === MessageId.BUFFER_RESPONSE
        ? "encodeMessage does not encode BufferResponse: use encodeBufferResponseHeader (no copy) or encodeBufferResponse"
        : `cannot encode a message with id ${String(id)}`,
    );
  }
  return codec.encode(msg);
}
