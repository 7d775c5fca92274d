import {
  BufferDecompressionError,
  BufferPoolDestroyedError,
  BufferRecycledError,
  BufferReorderingError,
  CancelledError,
  ConfigurationError,
  defineError,
  type ErrorCode,
  ErrorCodes,
  IllegalArgumentError,
  IllegalStateError,
  InputChannelID,
  InsufficientBuffersError,
  LimitExceededError,
  LocalTransportError,
  PartitionConnectionError,
  PartitionFileCorruptedError,
  PartitionFileWriteError,
  PartitionNotFoundError,
  ProducerFailedError,
  ProtocolError,
  RecordTooLargeError,
  RemoteTransportError,
  SerializationError,
  SluiceError,
  type SluiceErrorClass,
  TimeoutError,
} from "@sluice/core";
import { describe, expect, it } from "vitest";
import {
  errorFromErrorResponse,
  errorToErrorResponse,
  isFatalErrorResponse,
  MAX_ERROR_MESSAGE_BYTES,
} from "./error-response.js";
import { ERROR_WIRE_IDS, errorCodeOfWireId, errorWireIdOf } from "./error-wire-ids.js";
import { encodeMessage } from "./message-encoder.js";
import { MessageId } from "./message-id.js";
import type { ErrorResponse, NettyMessage } from "./netty-message.js";
import { NettyMessageDecoder } from "./netty-message-decoder.js";

/** Sends an ErrorResponse through the encoder and a client decoder. */
function overTheWire(msg: ErrorResponse): ErrorResponse {
  const received: NettyMessage[] = [];
  const decoder = new NettyMessageDecoder({
    side: "client",
    maxFrameSize: 1 << 20,
    onMessage: (m) => received.push(m),
  });
  decoder.feed(encodeMessage(msg));
  expect(received).toHaveLength(1);
  const [decoded] = received;
  if (decoded?.id !== MessageId.ERROR_RESPONSE) throw new Error("not an ErrorResponse");
  return decoded;
}

/**
 * The class a receiver should get for each code. Codes whose class is not in @sluice/core are
 * defined the way their owning package would (same name, same code): brands compare by name.
 */
const CLASS_OF: Record<ErrorCode, SluiceErrorClass | undefined> = {
  [ErrorCodes.UNKNOWN]: undefined,
  [ErrorCodes.INVALID_ARGUMENT]: IllegalArgumentError,
  [ErrorCodes.ILLEGAL_STATE]: IllegalStateError,
  [ErrorCodes.INSUFFICIENT_BUFFERS]: InsufficientBuffersError,
  [ErrorCodes.BUFFER_POOL_DESTROYED]: BufferPoolDestroyedError,
  [ErrorCodes.BUFFER_RECYCLED]: BufferRecycledError,
  [ErrorCodes.RECORD_TOO_LARGE]: RecordTooLargeError,
  [ErrorCodes.SERIALIZATION]: SerializationError,
  [ErrorCodes.CONFIG]: ConfigurationError,
  [ErrorCodes.DESCRIPTOR]: defineError("DescriptorError", ErrorCodes.DESCRIPTOR),
  [ErrorCodes.PLUGIN_NOT_FOUND]: defineError("PluginNotFoundError", ErrorCodes.PLUGIN_NOT_FOUND),
  [ErrorCodes.PLUGIN_EXPORT_MISSING]: defineError(
    "PluginExportMissingError",
    ErrorCodes.PLUGIN_EXPORT_MISSING,
  ),
  [ErrorCodes.PLUGIN_INVALID]: defineError("PluginInvalidError", ErrorCodes.PLUGIN_INVALID),
  [ErrorCodes.PLUGIN_INSTANTIATION]: defineError(
    "PluginInstantiationError",
    ErrorCodes.PLUGIN_INSTANTIATION,
  ),
  [ErrorCodes.PARTITION_NOT_FOUND]: PartitionNotFoundError,
  [ErrorCodes.PRODUCER_FAILED]: ProducerFailedError,
  [ErrorCodes.CANCELLED]: CancelledError,
  [ErrorCodes.PROTOCOL]: ProtocolError,
  [ErrorCodes.BUFFER_REORDERING]: BufferReorderingError,
  [ErrorCodes.PARTITION_CONNECTION]: PartitionConnectionError,
  [ErrorCodes.REMOTE_TRANSPORT]: RemoteTransportError,
  [ErrorCodes.LOCAL_TRANSPORT]: LocalTransportError,
  [ErrorCodes.TIMEOUT]: TimeoutError,
  [ErrorCodes.PLUGIN_CONTRACT]: defineError("PluginContractError", ErrorCodes.PLUGIN_CONTRACT),
  [ErrorCodes.TASK_DEPLOYMENT]: defineError("TaskDeploymentError", ErrorCodes.TASK_DEPLOYMENT),
  [ErrorCodes.TASK_NOT_FOUND]: defineError("TaskNotFoundError", ErrorCodes.TASK_NOT_FOUND),
  [ErrorCodes.BUFFER_DECOMPRESSION]: BufferDecompressionError,
  [ErrorCodes.PARTITION_FILE_CORRUPTED]: PartitionFileCorruptedError,
  [ErrorCodes.PARTITION_FILE_WRITE]: PartitionFileWriteError,
  [ErrorCodes.LIMIT_EXCEEDED]: LimitExceededError,
  [ErrorCodes.CHECKPOINT]: defineError("CheckpointError", ErrorCodes.CHECKPOINT),
  [ErrorCodes.METRIC_REPORTER]: defineError("MetricReporterError", ErrorCodes.METRIC_REPORTER),
  [ErrorCodes.TCK_WORKER_NOT_FOUND]: defineError(
    "ConformanceWorkerNotFoundError",
    ErrorCodes.TCK_WORKER_NOT_FOUND,
  ),
  [ErrorCodes.SINK_TRANSACTION]: defineError("SinkTransactionError", ErrorCodes.SINK_TRANSACTION),
  [ErrorCodes.HA_FENCED]: defineError("FencingTokenError", ErrorCodes.HA_FENCED),
  [ErrorCodes.HA_UNAVAILABLE]: defineError(
    "HighAvailabilityUnavailableError",
    ErrorCodes.HA_UNAVAILABLE,
  ),
  [ErrorCodes.HA_STATE]: defineError("HighAvailabilityStateError", ErrorCodes.HA_STATE),
  [ErrorCodes.KEYED_STATE]: defineError("KeyedStateError", ErrorCodes.KEYED_STATE),
  [ErrorCodes.TASK_SLOT_THREAD]: defineError("TaskSlotThreadError", ErrorCodes.TASK_SLOT_THREAD),
  [ErrorCodes.STATE_ASSIGNMENT]: defineError("StateAssignmentError", ErrorCodes.STATE_ASSIGNMENT),
};

describe("error wire ids", () => {
  it("gives every ErrorCodes value a distinct int16 wire id that maps back to it", () => {
    const codes = Object.values(ErrorCodes);
    const ids = codes.map((code) => errorWireIdOf(code));
    expect(new Set(ids).size).toBe(codes.length);
    expect(Object.keys(ERROR_WIRE_IDS).sort()).toEqual([...codes].sort());
    for (const code of codes) {
      const id = errorWireIdOf(code);
      expect(id).toBeGreaterThanOrEqual(-0x8000);
      expect(id).toBeLessThanOrEqual(0x7fff);
      expect(errorCodeOfWireId(id)).toBe(code);
    }
  });

  it("keeps the published numbers stable", () => {
    expect(errorWireIdOf(ErrorCodes.UNKNOWN)).toBe(0);
    expect(errorWireIdOf(ErrorCodes.PARTITION_NOT_FOUND)).toBe(14);
    expect(errorWireIdOf(ErrorCodes.PRODUCER_FAILED)).toBe(15);
    expect(errorWireIdOf(ErrorCodes.PROTOCOL)).toBe(17);
    expect(errorWireIdOf(ErrorCodes.TIMEOUT)).toBe(22);
  });

  it("maps codes this build does not know to the UNKNOWN wire id, and unknown ids to no code", () => {
    expect(errorWireIdOf("SLUICE_ERR_FROM_THE_FUTURE")).toBe(0);
    expect(errorWireIdOf("constructor")).toBe(0);
    expect(errorCodeOfWireId(999)).toBeUndefined();
  });
});

describe("ErrorResponse mapping", () => {
  for (const code of Object.values(ErrorCodes)) {
    const cls = CLASS_OF[code];
    it(`rebuilds ${cls?.name ?? "a generic SluiceError"} for ${code} after crossing the wire`, () => {
      const receiverId = new InputChannelID();
      const original = cls ? new cls("something broke") : new SluiceError(code, "something broke");
      const response = errorToErrorResponse(original, receiverId);
      expect(response.errorWireId).toBe(ERROR_WIRE_IDS[code]);
      const decoded = overTheWire(response);
      expect(decoded.receiverId?.equals(receiverId)).toBe(true);
      const rebuilt = errorFromErrorResponse(decoded);
      expect(rebuilt.code).toBe(code);
      expect(rebuilt).toBeInstanceOf(SluiceError);
      expect(rebuilt.message).toBe("something broke");
      if (cls) {
        expect(rebuilt.name).toBe(cls.name);
        expect(rebuilt).toBeInstanceOf(cls);
      }
    });
  }

  it("sends a plain Error as SLUICE_ERR_UNKNOWN and keeps its name in the message", () => {
    const rebuilt = errorFromErrorResponse(overTheWire(errorToErrorResponse(new TypeError("bad"))));
    expect(rebuilt.code).toBe("SLUICE_ERR_UNKNOWN");
    expect(rebuilt.name).toBe("SluiceError");
    expect(rebuilt.message).toBe("TypeError: bad");
  });

  it("sends a thrown non-error value as its string", () => {
    const response = errorToErrorResponse("just a string");
    expect(response.errorWireId).toBe(0);
    expect(errorFromErrorResponse(response).message).toBe("just a string");
  });

  it("turns an unknown wire id into SLUICE_ERR_UNKNOWN naming the original error and id", () => {
    const rebuilt = errorFromErrorResponse({
      id: MessageId.ERROR_RESPONSE,
      errorWireId: 4242,
      errorName: "QuantumFluxError",
      message: "flux",
    });
    expect(rebuilt.code).toBe("SLUICE_ERR_UNKNOWN");
    expect(rebuilt.name).toBe("SluiceError");
    expect(rebuilt.message).toContain("QuantumFluxError");
    expect(rebuilt.message).toContain("4242");
    expect(rebuilt.message).toContain("flux");
  });

  it("prefixes the sender's class name when it differs from the class of the code", () => {
    const Custom = defineError("MyCancelError", ErrorCodes.CANCELLED);
    const rebuilt = errorFromErrorResponse(errorToErrorResponse(new Custom("gone")));
    expect(rebuilt).toBeInstanceOf(CancelledError);
    expect(rebuilt.message).toBe("MyCancelError: gone");
  });

  it("appends the cause chain to the message", () => {
    const err = new ProducerFailedError("producer failed", {
      cause: new Error("disk full", { cause: new RangeError("offset 9") }),
    });
    const rebuilt = errorFromErrorResponse(overTheWire(errorToErrorResponse(err)));
    expect(rebuilt.message).toBe(
      "producer failed\nCaused by: Error: disk full\nCaused by: RangeError: offset 9",
    );
  });

  it("caps a long message at MAX_ERROR_MESSAGE_BYTES without splitting a character", () => {
    const response = errorToErrorResponse(new IllegalStateError("€".repeat(20_000)));
    const length = Buffer.byteLength(response.message);
    expect(length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_BYTES);
    expect(length).toBeGreaterThan(MAX_ERROR_MESSAGE_BYTES - 6);
    expect(response.message.endsWith("…")).toBe(true);
    expect(response.message).not.toContain("\uFFFD");
    expect(overTheWire(response).message).toBe(response.message);
  });

  it("marks a response without receiver as fatal for the connection", () => {
    const fatal = overTheWire(errorToErrorResponse(new ProtocolError("bad frame")));
    expect(fatal.receiverId).toBeUndefined();
    expect(isFatalErrorResponse(fatal)).toBe(true);
    expect(isFatalErrorResponse(errorToErrorResponse(new Error("x"), new InputChannelID()))).toBe(
      false,
    );
  });
});
