import {
  DataType,
  ExecutionAttemptID,
  ExecutionGraphID,
  InputChannelID,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  JobVertexID,
  ResultPartitionID,
} from "@sluice/core";
import { describe, expect, it } from "vitest";
import {
  encodeBufferResponse,
  encodeBufferResponseHeader,
  encodeMessage,
  writeBufferResponseHeader,
} from "./message-encoder.js";
import { MessageId } from "./message-id.js";
import { bufferResponseFrameSize } from "./message-layout.js";
import type { NonBufferMessage } from "./netty-message.js";
import { bufferOf, dataBufferHeader } from "./test-support/messages.js";

/**
 * Byte-exact layouts, written out by hand from the tables of docs/protocol.md: int32 frame
 * length including itself, int32 magic 0xBADC0FFE, int8 id, then the body, all big-endian.
 */

const MAGIC = [0xba, 0xdc, 0x0f, 0xfe];
const seq = (start: number, length = 16) => Array.from({ length }, (_, i) => (start + i) & 0xff);
const RECEIVER = seq(0x10);
const receiverId = new InputChannelID(Uint8Array.from(RECEIVER));
/** A big-endian int32, written out by shifting (independent of the encoder's Buffer calls). */
const i32 = (v: number) => [(v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff];

function bytes(buffer: Buffer): number[] {
  return [...buffer];
}

describe("message encoder layouts", () => {
  it("writes CloseRequest as the 9-byte header alone", () => {
    const frame = encodeMessage({ id: MessageId.CLOSE_REQUEST });
    expect(bytes(frame)).toEqual([...i32(9), ...MAGIC, 5]);
  });

  it("writes AddCredit as 29 bytes: header, credit, receiver id", () => {
    const frame = encodeMessage({ id: MessageId.ADD_CREDIT, credit: 0x01020304, receiverId });
    // biome-ignore format: byte layout
    expect(bytes(frame)).toEqual([
      0, 0, 0, 29, 0xba, 0xdc, 0x0f, 0xfe, 6,
      1, 2, 3, 4,
      ...RECEIVER,
    ]);
  });

  it("writes CancelPartitionRequest as 25 bytes: header, receiver id", () => {
    const frame = encodeMessage({ id: MessageId.CANCEL_PARTITION_REQUEST, receiverId });
    // biome-ignore format: byte layout
    expect(bytes(frame)).toEqual([
      0, 0, 0, 25, 0xba, 0xdc, 0x0f, 0xfe, 4,
      ...RECEIVER,
    ]);
  });

  it("writes ResumeConsumption and AckAllUserRecordsProcessed as 25 bytes with ids 7 and 8", () => {
    const resume = encodeMessage({ id: MessageId.RESUME_CONSUMPTION, receiverId });
    expect(bytes(resume)).toEqual([...i32(25), ...MAGIC, 7, ...RECEIVER]);
    const ack = encodeMessage({ id: MessageId.ACK_ALL_USER_RECORDS_PROCESSED, receiverId });
    expect(bytes(ack)).toEqual([...i32(25), ...MAGIC, 8, ...RECEIVER]);
  });

  it("writes BacklogAnnouncement and NewBufferSize as 29 bytes: header, int32, receiver id", () => {
    const backlog = encodeMessage({ id: MessageId.BACKLOG_ANNOUNCEMENT, backlog: 7, receiverId });
    expect(bytes(backlog)).toEqual([...i32(29), ...MAGIC, 9, 0, 0, 0, 7, ...RECEIVER]);
    const size = encodeMessage({ id: MessageId.NEW_BUFFER_SIZE, bufferSize: 0x8000, receiverId });
    expect(bytes(size)).toEqual([...i32(29), ...MAGIC, 10, 0, 0, 0x80, 0, ...RECEIVER]);
  });

  it("writes SegmentId as 33 bytes: header, subpartitionId, segmentId, receiver id", () => {
    const frame = encodeMessage({
      id: MessageId.SEGMENT_ID,
      subpartitionId: 3,
      segmentId: 0x0a0b,
      receiverId,
    });
    // biome-ignore format: byte layout
    expect(bytes(frame)).toEqual([
      0, 0, 0, 33, ...MAGIC, 11,
      0, 0, 0, 3,
      0, 0, 0x0a, 0x0b,
      ...RECEIVER,
    ]);
  });

  const DATA_SET = seq(0x40);
  const GRAPH = seq(0x60);
  const VERTEX = seq(0x80);
  const partitionId = new ResultPartitionID(
    new IntermediateResultPartitionID(new IntermediateDataSetID(Uint8Array.from(DATA_SET)), 5),
    new ExecutionAttemptID(
      new ExecutionGraphID(Uint8Array.from(GRAPH)),
      new JobVertexID(Uint8Array.from(VERTEX)),
      6,
      1,
    ),
  );
  // IntermediateResultPartitionID (data set 16, partitionNum 4), then ExecutionAttemptID
  // (graph 16, vertex 16, subtaskIndex 4, attemptNumber 4).
  const PARTITION_ID = [...DATA_SET, ...i32(5), ...GRAPH, ...VERTEX, ...i32(6), ...i32(1)];

  it("writes PartitionRequest as 97 bytes: partition 20, producer 40, index set 8, receiver, credit", () => {
    const frame = encodeMessage({
      id: MessageId.PARTITION_REQUEST,
      partitionId,
      subpartitionIndexSet: { start: 2, end: 4 },
      receiverId,
      credit: 2,
    });
    // biome-ignore format: byte layout
    const expected = [
      0, 0, 0, 97, 0xba, 0xdc, 0x0f, 0xfe, 2,
      ...PARTITION_ID,
      0, 0, 0, 2, // subpartitionIndexSet.start
      0, 0, 0, 4, // subpartitionIndexSet.end
      ...RECEIVER,
      0, 0, 0, 2, // credit
    ];
    expect(expected).toHaveLength(97);
    expect(bytes(frame)).toEqual(expected);
  });

  it("writes TaskEventRequest as header, event length and bytes, partition id, receiver id", () => {
    const frame = encodeMessage({
      id: MessageId.TASK_EVENT_REQUEST,
      event: Uint8Array.from([0xde, 0xad, 0xbe]),
      partitionId,
      receiverId,
    });
    // biome-ignore format: byte layout
    expect(bytes(frame)).toEqual([
      ...i32(9 + 4 + 3 + 60 + 16), ...MAGIC, 3,
      0, 0, 0, 3, 0xde, 0xad, 0xbe,
      ...PARTITION_ID,
      ...RECEIVER,
    ]);
  });

  it("writes ErrorResponse as wire id, name, message, hasReceiver and the optional receiver id", () => {
    const withReceiver = encodeMessage({
      id: MessageId.ERROR_RESPONSE,
      errorWireId: 14,
      errorName: "Ab",
      message: "é!",
      receiverId,
    });
    // biome-ignore format: byte layout
    expect(bytes(withReceiver)).toEqual([
      ...i32(9 + 2 + 2 + 2 + 4 + 3 + 1 + 16), ...MAGIC, 1,
      0, 14, // errorWireId int16
      0, 2, 0x41, 0x62, // name: uint16 length + "Ab"
      0, 0, 0, 3, 0xc3, 0xa9, 0x21, // message: int32 length + "é!" in UTF-8
      1, // hasReceiver
      ...RECEIVER,
    ]);
    const fatal = encodeMessage({
      id: MessageId.ERROR_RESPONSE,
      errorWireId: -2,
      errorName: "",
      message: "",
    });
    // biome-ignore format: byte layout
    expect(bytes(fatal)).toEqual([
      ...i32(9 + 2 + 2 + 4 + 1), ...MAGIC, 1,
      0xff, 0xfe, 0, 0, 0, 0, 0, 0,
      0, // no receiver: fatal
    ]);
  });

  it("writes the 9 + 38 byte BufferResponse header with a frame length that counts the payload", () => {
    const header = encodeBufferResponseHeader(
      dataBufferHeader(receiverId, {
        subpartitionId: 1,
        sequenceNumber: 0x11223344,
        backlog: 3,
        isCompressed: true,
        bufferSize: 0x8000,
      }),
    );
    // biome-ignore format: byte layout
    const expected = [
      0, 0, 0x80, 0x2f, 0xba, 0xdc, 0x0f, 0xfe, 0, // 47 + 32768 = 0x802f
      ...RECEIVER,
      0, 0, 0, 1, // subpartitionId
      0, 0, 0, 0, // numberOfPartialBuffers
      0x11, 0x22, 0x33, 0x44, // sequenceNumber
      0, 0, 0, 3, // backlog
      1, // dataType DATA_BUFFER
      1, // isCompressed
      0, 0, 0x80, 0, // bufferSize
    ];
    expect(expected).toHaveLength(47);
    expect(bytes(header)).toEqual(expected);
  });

  it("appends one int32 per partial buffer after the fixed BufferResponse header", () => {
    const header = encodeBufferResponseHeader({
      receiverId,
      subpartitionId: 0,
      partialBufferSizes: [100, 28],
      sequenceNumber: 9,
      backlog: 0,
      dataType: DataType.DATA_BUFFER_WITH_CLEAR_END,
      isCompressed: false,
      bufferSize: 128,
    });
    // biome-ignore format: byte layout
    expect(bytes(header)).toEqual([
      ...i32(47 + 8 + 128), ...MAGIC, 0,
      ...RECEIVER,
      0, 0, 0, 0, // subpartitionId
      0, 0, 0, 2, // numberOfPartialBuffers
      0, 0, 0, 9, // sequenceNumber
      0, 0, 0, 0, // backlog
      8, 0, // DATA_BUFFER_WITH_CLEAR_END, not compressed
      0, 0, 0, 128, // bufferSize
      0, 0, 0, 100, 0, 0, 0, 28, // partial sizes
    ]);
    expect(bufferResponseFrameSize(2, 128)).toBe(47 + 8 + 128);
  });

  it("makes header + payload view equal to the copied whole frame", () => {
    const payload = Uint8Array.from(seq(0, 300));
    const msg = {
      id: MessageId.BUFFER_RESPONSE,
      receiverId,
      subpartitionId: 2,
      partialBufferSizes: [],
      sequenceNumber: 1,
      backlog: 0,
      dataType: DataType.EVENT_BUFFER,
      isCompressed: false,
      bufferSize: payload.length,
      buffer: bufferOf(payload, DataType.EVENT_BUFFER),
    } as const;
    const whole = encodeBufferResponse(msg);
    expect(whole).toEqual(Buffer.concat([encodeBufferResponseHeader(msg), payload]));
    expect(whole.readInt32BE(0)).toBe(whole.length);
  });

  it("writes a BufferResponse header at an offset of a shared buffer", () => {
    const target = Buffer.alloc(10 + 47, 0xaa);
    const fields = dataBufferHeader(receiverId, { bufferSize: 5 });
    expect(writeBufferResponseHeader(target, 10, fields)).toBe(47);
    expect(target.subarray(0, 10)).toEqual(Buffer.alloc(10, 0xaa));
    expect(target.subarray(10)).toEqual(encodeBufferResponseHeader(fields));
  });
});

describe("message encoder validation", () => {
  const invalid: [string, NonBufferMessage][] = [
    ["AddCredit with credit 0", { id: MessageId.ADD_CREDIT, credit: 0, receiverId }],
    ["AddCredit with a fractional credit", { id: MessageId.ADD_CREDIT, credit: 1.5, receiverId }],
    [
      "BacklogAnnouncement with backlog 0",
      { id: MessageId.BACKLOG_ANNOUNCEMENT, backlog: 0, receiverId },
    ],
    ["NewBufferSize with size -1", { id: MessageId.NEW_BUFFER_SIZE, bufferSize: -1, receiverId }],
    [
      "SegmentId with segmentId 0",
      { id: MessageId.SEGMENT_ID, subpartitionId: 0, segmentId: 0, receiverId },
    ],
    [
      "PartitionRequest with end < start",
      {
        id: MessageId.PARTITION_REQUEST,
        partitionId: new ResultPartitionID(),
        subpartitionIndexSet: { start: 3, end: 2 },
        receiverId,
        credit: 0,
      },
    ],
    [
      "ErrorResponse with a wire id beyond int16",
      { id: MessageId.ERROR_RESPONSE, errorWireId: 0x8000, errorName: "", message: "" },
    ],
  ];
  for (const [what, msg] of invalid) {
    it(`refuses to encode ${what}`, () => {
      expect(() => encodeMessage(msg)).toThrow(
        expect.objectContaining({
          code: "SLUICE_ERR_INVALID_ARGUMENT",
          name: "IllegalArgumentError",
        }),
      );
    });
  }

  const header = {
    receiverId,
    subpartitionId: 0,
    partialBufferSizes: [] as number[],
    sequenceNumber: 0,
    backlog: 0,
    dataType: DataType.DATA_BUFFER,
    isCompressed: false,
    bufferSize: 10,
  };
  const badHeaders: [string, typeof header][] = [
    ["partial sizes that do not add up to bufferSize", { ...header, partialBufferSizes: [4, 5] }],
    ["a zero partial size", { ...header, partialBufferSizes: [10, 0] }],
    ["dataType NONE", { ...header, dataType: DataType.NONE }],
    ["a compressed event", { ...header, dataType: DataType.EVENT_BUFFER, isCompressed: true }],
    ["an empty event", { ...header, dataType: DataType.EVENT_BUFFER, bufferSize: 0 }],
    ["a negative backlog", { ...header, backlog: -1 }],
  ];
  for (const [what, fields] of badHeaders) {
    it(`refuses a BufferResponse header with ${what}`, () => {
      expect(() => encodeBufferResponseHeader(fields)).toThrow(
        expect.objectContaining({ code: "SLUICE_ERR_INVALID_ARGUMENT" }),
      );
    });
  }

  it("refuses to encode a BufferResponse through encodeMessage", () => {
    expect(() =>
      encodeMessage({ id: MessageId.BUFFER_RESPONSE, ...header } as unknown as NonBufferMessage),
    ).toThrow(/encodeBufferResponseHeader/);
  });

  it("refuses a BufferResponse whose bufferSize differs from its buffer's readable bytes", () => {
    expect(() =>
      encodeBufferResponse({
        id: MessageId.BUFFER_RESPONSE,
        ...header,
        buffer: bufferOf(new Uint8Array(3), DataType.DATA_BUFFER),
      }),
    ).toThrow(/bufferSize 10/);
  });
});
