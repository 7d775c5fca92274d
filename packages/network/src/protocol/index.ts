/**
 * The wire protocol of the credit-based shuffle (docs/protocol.md): message types and layouts,
 * the encoder, the streaming decoder and the ErrorResponse mapping.
 */

export type { BufferResponseAllocator } from "./buffer-response-allocator.js";
export {
  errorFromErrorResponse,
  errorToErrorResponse,
  isFatalErrorResponse,
  MAX_ERROR_MESSAGE_BYTES,
  MAX_ERROR_NAME_BYTES,
} from "./error-response.js";
export {
  ERROR_WIRE_IDS,
  errorCodeOfWireId,
  errorWireIdOf,
  UNKNOWN_ERROR_WIRE_ID,
} from "./error-wire-ids.js";
export {
  encodeBufferResponse,
  encodeBufferResponseHeader,
  encodeMessage,
  writeBufferResponseHeader,
} from "./message-encoder.js";
export { isClientBoundId, isServerBoundId, MessageId, messageName } from "./message-id.js";
export {
  BUFFER_RESPONSE,
  BUFFER_RESPONSE_HEADER_LENGTH,
  bufferResponseFrameSize,
  bufferResponseHeaderSize,
  FRAME_HEADER,
  MAGIC_NUMBER,
  MAX_WIRE_FRAME_LENGTH,
} from "./message-layout.js";
export type {
  AckAllUserRecordsProcessed,
  AddCredit,
  BacklogAnnouncement,
  BufferResponse,
  BufferResponseHeader,
  CancelPartitionRequest,
  ClientBoundMessage,
  CloseRequest,
  ErrorResponse,
  NettyMessage,
  NewBufferSize,
  NonBufferMessage,
  PartitionRequest,
  ResumeConsumption,
  SegmentId,
  ServerBoundMessage,
  TaskEventRequest,
} from "./netty-message.js";
export { NettyMessageDecoder, type NettyMessageDecoderOptions } from "./netty-message-decoder.js";
