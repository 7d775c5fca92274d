import {
  DataType,
  FreeingBufferRecycler,
  InputChannelID,
  type NetworkBuffer,
  NetworkBufferPool,
  ResultPartitionID,
} from "@sluice/core";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { BufferResponseAllocator } from "./buffer-response-allocator.js";
import { encodeBufferResponseHeader, encodeMessage } from "./message-encoder.js";
import { MessageId } from "./message-id.js";
import type { BufferResponse, NettyMessage } from "./netty-message.js";
import { NettyMessageDecoder } from "./netty-message-decoder.js";
import {
  bufferOf,
  clientBoundArb,
  comparable,
  dataBufferHeader,
  encodeFrame,
  recycleMessage,
  serverBoundArb,
  splitAt,
} from "./test-support/messages.js";
import "@sluice/core/testing";

const SEGMENT_SIZE = 4096;
const pools: NetworkBufferPool[] = [];

/** A real pool-backed allocator: one segment per data buffer, like a channel's credits. */
function poolAllocator(segments = 64): {
  pool: NetworkBufferPool;
  allocator: BufferResponseAllocator & { allocateDataBuffer: ReturnType<typeof vi.fn> };
} {
  const pool = new NetworkBufferPool(segments, SEGMENT_SIZE);
  pools.push(pool);
  const local = pool.createBufferPool(segments, segments);
  const allocator = {
    allocateDataBuffer: vi.fn((_receiver: InputChannelID, _size: number) => local.requestBuffer()),
    onSkipped: vi.fn(),
  };
  return { pool, allocator };
}

afterEach(() => {
  for (const pool of pools.splice(0)) pool.destroy();
});

function collect(
  side: "client" | "server",
  allocator?: BufferResponseAllocator,
  maxFrameSize = 1 << 20,
): { decoder: NettyMessageDecoder; messages: NettyMessage[] } {
  const messages: NettyMessage[] = [];
  const decoder = new NettyMessageDecoder({
    side,
    maxFrameSize,
    allocator,
    onMessage: (msg) => messages.push(msg),
  });
  return { decoder, messages };
}

function decodeAll(
  side: "client" | "server",
  chunks: readonly Uint8Array[],
  allocator?: BufferResponseAllocator,
): NettyMessage[] {
  const { decoder, messages } = collect(side, allocator);
  for (const chunk of chunks) decoder.feed(chunk);
  expect(decoder.isAtFrameBoundary()).toBe(true);
  return messages;
}

const receiverId = new InputChannelID(Uint8Array.from({ length: 16 }, (_, i) => i + 1));

function dataResponse(payload: Uint8Array, extra: Partial<BufferResponse> = {}): BufferResponse {
  const dataType = extra.dataType ?? DataType.DATA_BUFFER;
  const isCompressed = extra.isCompressed ?? false;
  return {
    id: MessageId.BUFFER_RESPONSE,
    receiverId,
    subpartitionId: 0,
    partialBufferSizes: [],
    sequenceNumber: 0,
    backlog: 0,
    bufferSize: payload.length,
    ...extra,
    dataType,
    isCompressed,
    buffer: payload.length === 0 ? undefined : bufferOf(payload, dataType, isCompressed),
  };
}

/** A small fixed client-bound sequence covering every kind of frame. */
function fixedClientSequence(): NettyMessage[] {
  return [
    dataResponse(
      Uint8Array.from({ length: 40 }, (_, i) => i),
      { sequenceNumber: 0, backlog: 2 },
    ),
    dataResponse(new Uint8Array(0), { sequenceNumber: 1 }),
    {
      id: MessageId.BUFFER_RESPONSE,
      receiverId,
      subpartitionId: 1,
      partialBufferSizes: [],
      sequenceNumber: 2,
      backlog: 0,
      dataType: DataType.END_OF_PARTITION,
      isCompressed: false,
      bufferSize: 4,
      buffer: bufferOf(Uint8Array.from([0, 0, 0, 1]), DataType.END_OF_PARTITION),
    },
    { id: MessageId.BACKLOG_ANNOUNCEMENT, backlog: 3, receiverId },
    dataResponse(
      Uint8Array.from({ length: 12 }, (_, i) => 200 + i),
      {
        partialBufferSizes: [5, 7],
        sequenceNumber: 3,
        isCompressed: true,
      },
    ),
    {
      id: MessageId.ERROR_RESPONSE,
      errorWireId: 14,
      errorName: "PartitionNotFoundError",
      message: "partition x not found",
      receiverId,
    },
    { id: MessageId.ERROR_RESPONSE, errorWireId: 17, errorName: "ProtocolError", message: "fatal" },
  ];
}

function fixedServerSequence(): NettyMessage[] {
  return [
    {
      id: MessageId.PARTITION_REQUEST,
      partitionId: new ResultPartitionID(),
      subpartitionIndexSet: { start: 0, end: 3 },
      receiverId,
      credit: 2,
    },
    { id: MessageId.ADD_CREDIT, credit: 1, receiverId },
    { id: MessageId.CLOSE_REQUEST },
    {
      id: MessageId.TASK_EVENT_REQUEST,
      event: Uint8Array.from([1, 2, 3, 4, 5]),
      partitionId: new ResultPartitionID(),
      receiverId,
    },
    { id: MessageId.CANCEL_PARTITION_REQUEST, receiverId },
    { id: MessageId.RESUME_CONSUMPTION, receiverId },
    { id: MessageId.ACK_ALL_USER_RECORDS_PROCESSED, receiverId },
    { id: MessageId.NEW_BUFFER_SIZE, bufferSize: 1024, receiverId },
    { id: MessageId.SEGMENT_ID, subpartitionId: 2, segmentId: 9, receiverId },
    { id: MessageId.CLOSE_REQUEST },
  ];
}

describe("NettyMessageDecoder round trips", () => {
  it("decodes every server-bound message to what was encoded", () => {
    const sent = fixedServerSequence();
    const received = decodeAll("server", sent.map(encodeFrame));
    expect(received.map(comparable)).toEqual(sent.map(comparable));
  });

  it("decodes every client-bound message to what was encoded, payloads included", () => {
    const sent = fixedClientSequence();
    const { pool, allocator } = poolAllocator();
    const received = decodeAll("client", sent.map(encodeFrame), allocator);
    expect(received.map(comparable)).toEqual(sent.map(comparable));
    received.forEach(recycleMessage);
    // Destroying the NetworkBufferPool destroys the LocalBufferPool, whose segments go back.
    pool.destroy();
    expect(pool).toHaveAllSegmentsAvailable();
  });

  it("decodes the same messages from a stream split at every single byte position", () => {
    for (const [side, sent] of [
      ["client", fixedClientSequence()],
      ["server", fixedServerSequence()],
    ] as const) {
      const stream = Buffer.concat(sent.map(encodeFrame));
      const expected = sent.map(comparable);
      for (let cut = 0; cut <= stream.length; cut++) {
        const received = decodeAll(side, splitAt(stream, [cut]));
        expect(received.map(comparable)).toEqual(expected);
      }
      // ... and fed one byte at a time.
      const bytewise = Array.from(stream, (b) => Uint8Array.of(b));
      expect(decodeAll(side, bytewise).map(comparable)).toEqual(expected);
    }
  });

  it("decodes concatenated random messages split at random points (client side)", () => {
    fc.assert(
      fc.property(
        fc.array(clientBoundArb(SEGMENT_SIZE), { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (sent, cutSeeds) => {
          const stream = Buffer.concat(sent.map(encodeFrame));
          const cuts = cutSeeds.map((s) => s % (stream.length + 1));
          const { pool, allocator } = poolAllocator(16);
          const received = decodeAll("client", splitAt(stream, cuts), allocator);
          expect(received.map(comparable)).toEqual(sent.map(comparable));
          received.forEach(recycleMessage);
          pool.destroy();
          expect(pool).toHaveAllSegmentsAvailable();
        },
      ),
      { numRuns: 300 },
    );
  });

  it("decodes concatenated random messages split at random points (server side)", () => {
    fc.assert(
      fc.property(
        fc.array(serverBoundArb, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (sent, cutSeeds) => {
          const stream = Buffer.concat(sent.map(encodeFrame));
          const cuts = cutSeeds.map((s) => s % (stream.length + 1));
          const received = decodeAll("server", splitAt(stream, cuts));
          expect(received.map(comparable)).toEqual(sent.map(comparable));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("decodes the right receiver for many distinct channels and shares repeated ones", () => {
    const ids = Array.from({ length: 500 }, () => new InputChannelID());
    const sent = [...ids, ...ids].map(
      (id, i): NettyMessage => ({ id: MessageId.ADD_CREDIT, credit: i + 1, receiverId: id }),
    );
    const received = decodeAll("server", [Buffer.concat(sent.map(encodeFrame))]);
    expect(received.map(comparable)).toEqual(sent.map(comparable));
    const again = decodeAll("server", [
      Buffer.concat([sent[0], sent[0]].map((m) => encodeFrame(m as NettyMessage))),
    ]);
    const [first, second] = again as { receiverId: InputChannelID }[];
    expect(first?.receiverId).toBe(second?.receiverId);
  });

  it("accepts plain Uint8Array chunks, not only Buffers", () => {
    const frame = encodeMessage({ id: MessageId.ADD_CREDIT, credit: 4, receiverId });
    const copy = new Uint8Array(frame.length + 3).subarray(3);
    copy.set(frame);
    const [msg] = decodeAll("server", [copy.subarray(0, 10), copy.subarray(10)]);
    expect(comparable(msg)).toEqual(
      comparable({ id: MessageId.ADD_CREDIT, credit: 4, receiverId }),
    );
  });
});

describe("NettyMessageDecoder BufferResponse payloads", () => {
  it("copies a data payload into the buffer the allocator lends for the receiving channel", () => {
    const { pool, allocator } = poolAllocator(4);
    const payload = Uint8Array.from({ length: 3000 }, (_, i) => i & 0xff);
    const frame = encodeFrame(dataResponse(payload, { isCompressed: true }));
    const received = decodeAll("client", splitAt(frame, [20, 50, 1000, 2000]), allocator);
    expect(allocator.allocateDataBuffer).toHaveBeenCalledTimes(1);
    const [id, size] = allocator.allocateDataBuffer.mock.calls[0] as [InputChannelID, number];
    expect(id.equals(receiverId)).toBe(true);
    expect(size).toBe(3000);
    const msg = received[0] as BufferResponse;
    const buffer = msg.buffer as NetworkBuffer;
    expect(buffer.getMemorySegment().owner).toBe(pool);
    expect(buffer.getSize()).toBe(3000);
    expect(buffer.getDataType()).toBe(DataType.DATA_BUFFER);
    expect(buffer.isCompressed()).toBe(true);
    expect(Buffer.from(buffer.view())).toEqual(Buffer.from(payload));
    buffer.recycleBuffer();
  });

  it("puts an event into an exact-size unpooled buffer without asking the allocator", () => {
    const { allocator } = poolAllocator(2);
    const event = Uint8Array.from([0, 0, 0, 3, 9, 9]);
    const frame = encodeFrame({
      ...dataResponse(event),
      dataType: DataType.PRIORITIZED_EVENT_BUFFER,
      buffer: bufferOf(event, DataType.PRIORITIZED_EVENT_BUFFER),
    });
    const [msg] = decodeAll("client", [frame], allocator) as BufferResponse[];
    expect(allocator.allocateDataBuffer).not.toHaveBeenCalled();
    const buffer = msg?.buffer as NetworkBuffer;
    expect(buffer.getRecycler()).toBe(FreeingBufferRecycler);
    expect(buffer.getMaxCapacity()).toBe(event.length);
    expect(buffer.getDataType()).toBe(DataType.PRIORITIZED_EVENT_BUFFER);
    expect(buffer.isBuffer()).toBe(false);
    expect([...buffer.view()]).toEqual([...event]);
  });

  it("emits a zero-size data buffer with no buffer and allocates nothing", () => {
    const { allocator } = poolAllocator(2);
    const [msg] = decodeAll(
      "client",
      [encodeFrame(dataResponse(new Uint8Array(0), { backlog: 5 }))],
      allocator,
    ) as BufferResponse[];
    expect(allocator.allocateDataBuffer).not.toHaveBeenCalled();
    expect(msg?.buffer).toBeUndefined();
    expect(msg?.bufferSize).toBe(0);
    expect(msg?.backlog).toBe(5);
  });

  it("reports partial buffer sizes split across chunks", () => {
    const payload = Uint8Array.from({ length: 10 }, (_, i) => i);
    const frame = encodeFrame(dataResponse(payload, { partialBufferSizes: [1, 2, 3, 4] }));
    // Cut inside the second partial size.
    const [msg] = decodeAll("client", splitAt(frame, [47 + 5, 47 + 9])) as BufferResponse[];
    expect(msg?.partialBufferSizes).toEqual([1, 2, 3, 4]);
    const buffer = msg?.buffer as NetworkBuffer;
    expect([...buffer.view()]).toEqual([...payload]);
  });

  it("skips the payload for an unknown receiver, calls onSkipped, and decodes the next frame", () => {
    const onSkipped = vi.fn();
    const allocator: BufferResponseAllocator = {
      allocateDataBuffer: vi.fn(() => undefined),
      onSkipped,
    };
    const skipped = encodeFrame(dataResponse(new Uint8Array(500).fill(7)));
    const next = encodeMessage({ id: MessageId.BACKLOG_ANNOUNCEMENT, backlog: 1, receiverId });
    const stream = Buffer.concat([skipped, next]);
    const received = decodeAll("client", splitAt(stream, [47, 100, 300, 540]), allocator);
    expect(onSkipped).toHaveBeenCalledTimes(1);
    const [skippedId, skippedSize] = onSkipped.mock.calls[0] as [InputChannelID, number];
    expect(skippedId.equals(receiverId)).toBe(true);
    expect(skippedSize).toBe(500);
    expect(received.map(comparable)).toEqual([
      comparable({ id: MessageId.BACKLOG_ANNOUNCEMENT, backlog: 1, receiverId }),
    ]);
  });

  it("recycles the partially filled buffer when destroyed mid-payload", () => {
    const { pool, allocator } = poolAllocator(3);
    const frame = encodeFrame(dataResponse(new Uint8Array(2000).fill(1)));
    const { decoder, messages } = collect("client", allocator);
    decoder.feed(frame.subarray(0, 1000));
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(2);
    decoder.destroy();
    decoder.destroy();
    expect(messages).toEqual([]);
    pool.destroy();
    expect(pool).toHaveAllSegmentsAvailable();
    expect(() => decoder.feed(frame.subarray(1000))).toThrow(
      expect.objectContaining({ code: "SLUICE_ERR_ILLEGAL_STATE" }),
    );
  });

  it("fails with a ProtocolError and recycles the buffer when the payload exceeds the channel's buffer", () => {
    const { pool, allocator } = poolAllocator(2);
    const { decoder } = collect("client", allocator);
    const frame = encodeFrame(dataResponse(new Uint8Array(SEGMENT_SIZE + 1)));
    expect(() => decoder.feed(frame)).toThrow(/does not fit the channel's buffer of 4096 bytes/);
    pool.destroy();
    expect(pool).toHaveAllSegmentsAvailable();
  });
});

/** Feeds `bytes` and returns the error thrown, failing the test when nothing is thrown. */
function decodeError(side: "client" | "server", bytes: Buffer, maxFrameSize = 1 << 20): Error {
  const allocate = vi.fn(() => undefined);
  const { decoder } = collect(side, { allocateDataBuffer: allocate }, maxFrameSize);
  let thrown: unknown;
  try {
    decoder.feed(bytes);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toMatchObject({ code: "SLUICE_ERR_PROTOCOL", name: "ProtocolError" });
  // The decoder refuses further input after a violation.
  expect(decoder.isFailed()).toBe(true);
  expect(() => decoder.feed(Buffer.from([0]))).toThrow(
    expect.objectContaining({
      code: "SLUICE_ERR_PROTOCOL",
      message: expect.stringMatching(/already failed/),
    }),
  );
  return thrown as Error;
}

function frame(id: number, body: number[], length = 9 + body.length, magic = 0xbadc0ffe): Buffer {
  const header = Buffer.alloc(9);
  header.writeInt32BE(length, 0);
  header.writeUInt32BE(magic, 4);
  header[8] = id;
  return Buffer.concat([header, Buffer.from(body)]);
}

const RECEIVER_BYTES = [...receiverId.toBytes()];
const RECEIVER_HEX = receiverId.toString();

describe("NettyMessageDecoder violations", () => {
  it("rejects a bad magic number and names it in hex with the frame's stream offset", () => {
    const good = encodeMessage({ id: MessageId.CLOSE_REQUEST });
    const err = decodeError("server", Buffer.concat([good, frame(5, [], 9, 0xcafebabe)]));
    expect(err.message).toContain("0xcafebabe");
    expect(err.message).toContain("stream offset 9");
  });

  it("rejects a frame longer than maxFrameSize after reading only its header", () => {
    const allocate = vi.fn(() => undefined);
    const { decoder } = collect("client", { allocateDataBuffer: allocate }, 1000);
    const header = encodeBufferResponseHeader(dataBufferHeader(receiverId, { bufferSize: 5000 }));
    expect(() => decoder.feed(header.subarray(0, 9))).toThrow(
      /frame length 5047 exceeds the max frame size 1000.*0x000013b7/,
    );
    expect(allocate).not.toHaveBeenCalled();
  });

  it("rejects a frame length below the header", () => {
    expect(decodeError("server", frame(5, [], 8)).message).toMatch(/frame length 8 is below/);
    expect(decodeError("server", frame(5, [], -1)).message).toContain("0xffffffff");
  });

  it("rejects ids that are not valid for the decoder's side", () => {
    const addCredit = encodeMessage({ id: MessageId.ADD_CREDIT, credit: 1, receiverId });
    expect(decodeError("client", addCredit).message).toMatch(
      /message id 0x06 \(AddCredit\) is not valid for the client side/,
    );
    const backlog = encodeMessage({ id: MessageId.BACKLOG_ANNOUNCEMENT, backlog: 1, receiverId });
    expect(decodeError("server", backlog).message).toMatch(
      /0x09 \(BacklogAnnouncement\).*server side/,
    );
    expect(decodeError("server", frame(0x7f, [])).message).toMatch(/0x7f \(unknown\(127\)\)/);
  });

  it("rejects a fixed-size message whose length does not match its body", () => {
    const err = decodeError("server", frame(6, [0, 0, 0, 1, ...RECEIVER_BYTES, 0]));
    expect(err.message).toMatch(/body of 21 bytes, but a AddCredit body has exactly 20 bytes/);
  });

  it("rejects AddCredit with credit <= 0 and names the receiver", () => {
    const err = decodeError("server", frame(6, [0xff, 0xff, 0xff, 0xff, ...RECEIVER_BYTES]));
    expect(err.message).toContain("credit -1 is not > 0");
    expect(err.message).toContain(RECEIVER_HEX);
  });

  function bufferHeader(fields: {
    n?: number;
    size?: number;
    dataType?: number;
    compressed?: number;
    backlog?: number;
    length?: number;
  }): Buffer {
    const n = fields.n ?? 0;
    const size = fields.size ?? 0;
    const body = Buffer.alloc(38);
    body.set(RECEIVER_BYTES, 0);
    body.writeInt32BE(0, 16);
    body.writeInt32BE(n, 20);
    body.writeInt32BE(0, 24);
    body.writeInt32BE(fields.backlog ?? 0, 28);
    body[32] = fields.dataType ?? DataType.DATA_BUFFER;
    body[33] = fields.compressed ?? 0;
    body.writeInt32BE(size, 34);
    return frame(0, [...body], fields.length ?? 47 + 4 * Math.max(0, n) + Math.max(0, size));
  }

  it("rejects a BufferResponse whose header fields do not add up to the frame length", () => {
    const err = decodeError("client", bufferHeader({ size: 10, length: 47 + 11 }));
    expect(err.message).toMatch(/do not add up.*47 \+ 4 × 0 partial sizes \+ bufferSize 10 = 57/);
    expect(err.message).toContain(RECEIVER_HEX);
  });

  it("rejects a negative bufferSize", () => {
    expect(decodeError("client", bufferHeader({ size: -5, length: 100 })).message).toMatch(
      /negative bufferSize -5 \(0xfffffffb\)/,
    );
  });

  it("rejects numberOfPartialBuffers out of range", () => {
    expect(decodeError("client", bufferHeader({ n: 1000, length: 47 + 8 })).message).toMatch(
      /numberOfPartialBuffers 1000 .* out of range \[0, 2\]/,
    );
    expect(decodeError("client", bufferHeader({ n: -1, length: 47 })).message).toMatch(
      /numberOfPartialBuffers -1/,
    );
  });

  it("rejects partial sizes that do not add up to the buffer size", () => {
    const header = bufferHeader({ n: 2, size: 10 });
    const bytes = Buffer.concat([header, Buffer.from([0, 0, 0, 3, 0, 0, 0, 4])]);
    expect(decodeError("client", bytes).message).toMatch(/add up to 7, not to bufferSize 10/);
  });

  it("rejects a dataType beyond MAX_DATA_TYPE, a compressed event and an empty event", () => {
    expect(decodeError("client", bufferHeader({ dataType: 14, size: 1 })).message).toMatch(
      /dataType 0x0e is not in \[1, 13\]/,
    );
    expect(decodeError("client", bufferHeader({ dataType: 0, size: 1 })).message).toMatch(
      /dataType 0x00/,
    );
    expect(
      decodeError("client", bufferHeader({ dataType: 2, compressed: 1, size: 1 })).message,
    ).toMatch(/EVENT_BUFFER cannot be compressed/);
    expect(decodeError("client", bufferHeader({ dataType: 2 })).message).toMatch(
      /EVENT_BUFFER of 0 bytes/,
    );
    expect(decodeError("client", bufferHeader({ compressed: 2, size: 1 })).message).toMatch(
      /isCompressed byte 0x02/,
    );
  });

  it("rejects an ErrorResponse whose message length overruns the frame", () => {
    const bytes = frame(1, [0, 1, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0]);
    expect(decodeError("client", bytes).message).toMatch(
      /message length 2147483647 \(0x7fffffff\)/,
    );
  });

  it("rejects a TaskEventRequest whose event length disagrees with the frame", () => {
    const body = [0, 0, 0, 9, ...new Array(76).fill(0)];
    expect(decodeError("server", frame(3, body)).message).toMatch(/event length 9/);
  });

  it("rejects a PartitionRequest with a negative partition number as a protocol error", () => {
    const body = new Array(88).fill(0);
    body.splice(16, 4, 0xff, 0xff, 0xff, 0xff);
    body.splice(68, 16, ...RECEIVER_BYTES);
    const err = decodeError("server", frame(2, body));
    expect(err.message).toMatch(/invalid ResultPartitionID: partitionNum .*got -1/);
    expect(err.message).toContain(RECEIVER_HEX);
  });

  it("lets an error thrown by onMessage propagate unchanged and then refuses input", () => {
    const boom = new Error("handler broke");
    const decoder = new NettyMessageDecoder({
      side: "server",
      maxFrameSize: 1024,
      onMessage: () => {
        throw boom;
      },
    });
    expect(() => decoder.feed(encodeMessage({ id: MessageId.CLOSE_REQUEST }))).toThrow(boom);
    expect(decoder.isFailed()).toBe(true);
    expect(() => decoder.feed(Buffer.alloc(1))).toThrow(/already failed: handler broke/);
  });

  it("validates its options", () => {
    const onMessage = () => {};
    expect(() => new NettyMessageDecoder({ side: "server", maxFrameSize: 8, onMessage })).toThrow(
      expect.objectContaining({ code: "SLUICE_ERR_INVALID_ARGUMENT" }),
    );
    expect(
      () => new NettyMessageDecoder({ side: "middle" as "server", maxFrameSize: 1024, onMessage }),
    ).toThrow(expect.objectContaining({ code: "SLUICE_ERR_INVALID_ARGUMENT" }));
  });
});
