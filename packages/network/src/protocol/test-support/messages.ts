import {
  DataType,
  ExecutionAttemptID,
  ExecutionGraphID,
  FreeingBufferRecycler,
  InputChannelID,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  isBufferType,
  JobVertexID,
  MemorySegment,
  NetworkBuffer,
  ResultPartitionID,
} from "@sluice/core";
import fc from "fast-check";
import { encodeBufferResponse, encodeMessage } from "../message-encoder.js";
import { MessageId } from "../message-id.js";
import type { BufferResponse, BufferResponseHeader, NettyMessage } from "../netty-message.js";

/** Test helpers shared by the protocol tests: arbitraries, encoding and comparison. */

export const INT32_MAX = 0x7fffffff;

export const idBytesArb = fc.uint8Array({ minLength: 16, maxLength: 16 });

export const inputChannelIdArb: fc.Arbitrary<InputChannelID> = idBytesArb.map(
  (bytes) => new InputChannelID(bytes),
);

export const resultPartitionIdArb: fc.Arbitrary<ResultPartitionID> = fc
  .tuple(
    idBytesArb,
    fc.integer({ min: 0, max: INT32_MAX }),
    idBytesArb,
    idBytesArb,
    fc.integer({ min: 0, max: INT32_MAX }),
    fc.integer({ min: 0, max: INT32_MAX }),
  )
  .map(
    ([dataSet, partitionNum, graph, vertex, subtask, attempt]) =>
      new ResultPartitionID(
        new IntermediateResultPartitionID(new IntermediateDataSetID(dataSet), partitionNum),
        new ExecutionAttemptID(
          new ExecutionGraphID(graph),
          new JobVertexID(vertex),
          subtask,
          attempt,
        ),
      ),
  );

const nonNegative = fc.integer({ min: 0, max: INT32_MAX });
const positive = fc.integer({ min: 1, max: INT32_MAX });
const int32 = fc.integer({ min: -0x80000000, max: INT32_MAX });

/** A NetworkBuffer holding exactly `bytes` (unpooled). */
export function bufferOf(bytes: Uint8Array, dataType: DataType, compressed = false): NetworkBuffer {
  const segment = MemorySegment.wrap(Buffer.from(bytes));
  return new NetworkBuffer(segment, FreeingBufferRecycler, dataType, bytes.length, compressed);
}

/** Splits `size` (>= 1) into `parts` sizes of at least 1 using the given cut seeds. */
function splitSize(size: number, cuts: number[]): number[] {
  const points = [...new Set(cuts.map((c) => 1 + (c % Math.max(1, size - 1))))]
    .filter((p) => p > 0 && p < size)
    .sort((a, b) => a - b);
  const sizes: number[] = [];
  let last = 0;
  for (const p of points) {
    sizes.push(p - last);
    last = p;
  }
  sizes.push(size - last);
  return sizes;
}

const DATA_TYPES = [DataType.DATA_BUFFER, DataType.DATA_BUFFER_WITH_CLEAR_END];
const EVENT_TYPES = Object.values(DataType).filter(
  (v): v is DataType => typeof v === "number" && v !== DataType.NONE && !isBufferType(v),
);

/** BufferResponses of data (0..maxDataSize bytes, optionally partial and compressed) and events. */
export function bufferResponseArb(maxDataSize = 4096): fc.Arbitrary<BufferResponse> {
  const header = fc.record({
    receiverId: inputChannelIdArb,
    subpartitionId: nonNegative,
    sequenceNumber: int32,
    backlog: nonNegative,
  });
  const data = fc
    .tuple(
      fc.constantFrom(...DATA_TYPES),
      fc.uint8Array({ maxLength: maxDataSize }),
      fc.boolean(),
      fc.option(fc.array(fc.nat(), { maxLength: 6 }), { nil: undefined }),
    )
    .map(([dataType, bytes, isCompressed, cuts]) => ({
      dataType,
      bytes,
      isCompressed,
      partialBufferSizes:
        cuts === undefined || bytes.length === 0 ? [] : splitSize(bytes.length, cuts),
    }));
  const event = fc
    .tuple(fc.constantFrom(...EVENT_TYPES), fc.uint8Array({ minLength: 1, maxLength: 256 }))
    .map(([dataType, bytes]) => ({
      dataType,
      bytes,
      isCompressed: false,
      partialBufferSizes: [] as number[],
    }));
  return fc.tuple(header, fc.oneof({ weight: 3, arbitrary: data }, event)).map(([h, body]) => ({
    id: MessageId.BUFFER_RESPONSE,
    ...h,
    partialBufferSizes: body.partialBufferSizes,
    dataType: body.dataType,
    isCompressed: body.isCompressed,
    bufferSize: body.bytes.length,
    buffer:
      body.bytes.length === 0 ? undefined : bufferOf(body.bytes, body.dataType, body.isCompressed),
  }));
}

const errorTextArb = (maxLength: number) =>
  fc.string({ unit: "grapheme", maxLength }).filter((s) => Buffer.byteLength(s) <= maxLength * 4);

export const errorResponseArb: fc.Arbitrary<NettyMessage> = fc.record({
  id: fc.constant(MessageId.ERROR_RESPONSE),
  errorWireId: fc.integer({ min: -0x8000, max: 0x7fff }),
  errorName: errorTextArb(30),
  message: errorTextArb(200),
  receiverId: fc.option(inputChannelIdArb, { nil: undefined }),
});

/** Messages a client decodes (ids 0, 1, 9). */
export function clientBoundArb(maxDataSize = 4096): fc.Arbitrary<NettyMessage> {
  return fc.oneof(
    { weight: 4, arbitrary: bufferResponseArb(maxDataSize) as fc.Arbitrary<NettyMessage> },
    errorResponseArb,
    fc.record({
      id: fc.constant(MessageId.BACKLOG_ANNOUNCEMENT),
      backlog: positive,
      receiverId: inputChannelIdArb,
    }),
  );
}

/** Messages a server decodes (ids 2–8, 10, 11). */
export const serverBoundArb: fc.Arbitrary<NettyMessage> = fc.oneof(
  fc
    .record({
      partitionId: resultPartitionIdArb,
      start: nonNegative,
      span: fc.nat(64),
      receiverId: inputChannelIdArb,
      credit: nonNegative,
    })
    .map(({ partitionId, start, span, receiverId, credit }) => ({
      id: MessageId.PARTITION_REQUEST,
      partitionId,
      subpartitionIndexSet: { start, end: Math.min(INT32_MAX, start + span) },
      receiverId,
      credit,
    })),
  fc.record({
    id: fc.constant(MessageId.TASK_EVENT_REQUEST),
    event: fc.uint8Array({ maxLength: 300 }),
    partitionId: resultPartitionIdArb,
    receiverId: inputChannelIdArb,
  }),
  fc.record({ id: fc.constant(MessageId.CANCEL_PARTITION_REQUEST), receiverId: inputChannelIdArb }),
  fc.constant({ id: MessageId.CLOSE_REQUEST }),
  fc.record({
    id: fc.constant(MessageId.ADD_CREDIT),
    credit: positive,
    receiverId: inputChannelIdArb,
  }),
  fc.record({ id: fc.constant(MessageId.RESUME_CONSUMPTION), receiverId: inputChannelIdArb }),
  fc.record({
    id: fc.constant(MessageId.ACK_ALL_USER_RECORDS_PROCESSED),
    receiverId: inputChannelIdArb,
  }),
  fc.record({
    id: fc.constant(MessageId.NEW_BUFFER_SIZE),
    bufferSize: positive,
    receiverId: inputChannelIdArb,
  }),
  fc.record({
    id: fc.constant(MessageId.SEGMENT_ID),
    subpartitionId: nonNegative,
    segmentId: positive,
    receiverId: inputChannelIdArb,
  }),
) as fc.Arbitrary<NettyMessage>;

/**
 * The header of an uncompressed data buffer for `receiverId`, subpartition 0, sequence number 0,
 * no backlog and no partial buffers; `fields` states what a test varies.
 */
export function dataBufferHeader(
  receiverId: InputChannelID,
  fields: Partial<BufferResponseHeader> = {},
): BufferResponseHeader {
  return {
    receiverId,
    subpartitionId: 0,
    partialBufferSizes: [],
    sequenceNumber: 0,
    backlog: 0,
    dataType: DataType.DATA_BUFFER,
    isCompressed: false,
    bufferSize: 0,
    ...fields,
  };
}

/** Encodes any message into one frame (BufferResponse payloads copied). */
export function encodeFrame(msg: NettyMessage): Buffer {
  return msg.id === MessageId.BUFFER_RESPONSE ? encodeBufferResponse(msg) : encodeMessage(msg);
}

/**
 * A plain, deeply comparable form of a message: ids as strings, bytes as hex, a buffer as its
 * readable bytes with its type and compression flag; `undefined` fields dropped.
 */
export function comparable(value: unknown): unknown {
  if (value instanceof NetworkBuffer) {
    return {
      bytes: Buffer.from(value.readableView()).toString("hex"),
      dataType: value.getDataType(),
      compressed: value.isCompressed(),
    };
  }
  if (value instanceof Uint8Array) return Buffer.from(value).toString("hex");
  if (Array.isArray(value)) return value.map(comparable);
  if (value !== null && typeof value === "object") {
    const toJSON = (value as { toJSON?: () => unknown }).toJSON;
    if (typeof toJSON === "function") return toJSON.call(value);
    const out: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(value)) {
      if (field !== undefined) out[key] = comparable(field);
    }
    return out;
  }
  return value;
}

/** Recycles the buffer of a decoded BufferResponse, if any. */
export function recycleMessage(msg: NettyMessage): void {
  if (
    msg.id === MessageId.BUFFER_RESPONSE &&
    msg.buffer !== undefined &&
    !msg.buffer.isRecycled()
  ) {
    msg.buffer.recycleBuffer();
  }
}

/** Splits `bytes` at the given (sorted or unsorted, possibly duplicate) cut positions. */
export function splitAt(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => Math.min(bytes.length, Math.max(0, c))))].sort(
    (a, b) => a - b,
  );
  const chunks: Buffer[] = [];
  let last = 0;
  for (const p of points) {
    chunks.push(bytes.subarray(last, p));
    last = p;
  }
  chunks.push(bytes.subarray(last));
  return chunks;
}
