import {
  CheckpointBarrier,
  type DataInputDeserializer,
  EndOfData,
  EndOfPartitionEvent,
  ErrorCodes,
  frameRecord,
  NetworkBufferPool,
  StringSerializer,
  type TypeSerializer,
} from "@sluice/core";
import type { BufferOrEvent, InputGate } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import { PollStatus, RecordReader } from "./record-reader.js";
import { encodeString, wireLocalPartition } from "./test-support/local-wiring.js";
import "@sluice/core/testing";

const serializer = new StringSerializer();

function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("expected a value");
  return value;
}

/** One producer partition with two subpartitions, both read by one gate in this process. */
function wire(pool: NetworkBufferPool, segmentRecords: number) {
  return wireLocalPartition(pool, {
    channels: 2,
    partitionBuffers: [3, segmentRecords],
    gateBuffers: [1, 4],
  });
}

/** A reader of `gate` that records each event as `kind@channel` and resumes barred channels. */
function eventRecordingReader(gate: ReturnType<typeof wire>["gate"]) {
  const events: string[] = [];
  const reader = new RecordReader(gate, serializer, {
    onEvent: (event, channel) => {
      events.push(`${event.kind}@${channel}`);
      // An aligned barrier blocks its channel upstream until the consumer resumes it.
      if (event.kind === "CheckpointBarrier") gate.resumeConsumption(channel);
    },
  });
  return { reader, events };
}

describe("RecordReader", () => {
  let pool: NetworkBufferPool;

  afterEach(() => {
    pool.destroy();
    expect(pool).toHaveAllSegmentsAvailable();
  });

  it("iterates every record with for await, including records spanning buffers, and surfaces events", async () => {
    pool = new NetworkBufferPool(64, 128);
    const { partition, gate } = wire(pool, 32);
    const { reader, events } = eventRecordingReader(gate);
    const long = "x".repeat(300); // spans three 128-byte buffers
    const produced = ["a", long, "b", "c"];
    const producer = (async () => {
      for (const [i, value] of produced.entries()) {
        while (!partition.isAvailable()) await partition.getAvailableFuture();
        partition.emitRecord(encodeString(value), i % 2);
      }
      partition.broadcastEvent(new CheckpointBarrier(7n, 1n));
      partition.broadcastEvent(new EndOfData());
      partition.finish();
    })();
    const received: string[] = [];
    for await (const record of reader) received.push(record);
    await producer;
    expect(received.sort()).toEqual([...produced].sort());
    expect(events.sort()).toEqual([
      "CheckpointBarrier@0",
      "CheckpointBarrier@1",
      "EndOfData@0",
      "EndOfData@1",
    ]);
    // EndOfData on every channel ended the records; EndOfPartition is read after them.
    expect(reader.isEndOfData()).toBe(true);
    expect(reader.isFinished()).toBe(false);
    while (!reader.pollToEndOfPartition()) await reader.getAvailableFuture();
    expect(reader.isFinished()).toBe(true);
    reader.close();
    await gate.close();
    partition.close();
  });

  it("takes a checkpoint barrier in for await only after the loop processed every record before it", async () => {
    pool = new NetworkBufferPool(64, 128);
    const { partition, gate } = wire(pool, 32);
    const processed: string[] = [];
    let snapshot: string[] | undefined;
    const reader = new RecordReader(gate, serializer, {
      // Where a barrier handler would snapshot the task's state.
      onEvent: (event, channel) => {
        if (event.kind !== "CheckpointBarrier") return;
        if (channel === 0) snapshot = [...processed];
        gate.resumeConsumption(channel);
      },
    });
    // One channel carries records, the barrier and more records, all ready before the first
    // read: a reader that decodes past the barrier before the loop sees a record shows here.
    for (const value of ["a", "b", "c"]) partition.emitRecord(encodeString(value), 0);
    partition.broadcastEvent(new CheckpointBarrier(1n, 1n));
    for (const value of ["d", "e"]) partition.emitRecord(encodeString(value), 0);
    partition.finish();
    for await (const record of reader) {
      await new Promise((resolve) => setImmediate(resolve));
      processed.push(record);
    }
    expect(processed).toEqual(["a", "b", "c", "d", "e"]);
    expect(snapshot).toEqual(["a", "b", "c"]);
    reader.close();
    await gate.close();
    partition.close();
  });

  it("reports NOTHING_AVAILABLE, then the records, then END_OF_INPUT from the synchronous poll", async () => {
    pool = new NetworkBufferPool(64, 128);
    const { partition, gate } = wire(pool, 32);
    const reader = new RecordReader(gate, serializer);
    const seen: string[] = [];
    expect(reader.pollRecords((r) => seen.push(r))).toBe(PollStatus.NOTHING_AVAILABLE);
    partition.emitRecord(encodeString("one"), 0);
    partition.emitRecord(encodeString("two"), 1);
    partition.finish();
    let status: PollStatus = PollStatus.NOTHING_AVAILABLE;
    for (let i = 0; i < 20 && status !== PollStatus.END_OF_INPUT; i++) {
      await new Promise((r) => setImmediate(r));
      status = reader.pollRecords((r) => seen.push(r));
    }
    expect(status).toBe(PollStatus.END_OF_INPUT);
    expect(seen.sort()).toEqual(["one", "two"]);
    reader.close();
    await gate.close();
    partition.close();
  });

  it("ends the records at EndOfData on every channel, takes the events after it to EndOfPartition, and refuses data after EndOfData", async () => {
    pool = new NetworkBufferPool(64, 128);
    const { partition, gate } = wire(pool, 32);
    const { reader, events } = eventRecordingReader(gate);
    partition.emitRecord(encodeString("a"), 0);
    partition.emitRecord(encodeString("b"), 1);
    partition.broadcastEvent(new EndOfData());
    // The barrier of a final checkpoint, after the end of data.
    partition.broadcastEvent(new CheckpointBarrier(3n, 1n));
    partition.flushAll();
    const received: string[] = [];
    let status: PollStatus = PollStatus.NOTHING_AVAILABLE;
    while (status !== PollStatus.END_OF_INPUT) {
      status = reader.pollRecords((word) => received.push(word));
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    }
    expect(received.sort()).toEqual(["a", "b"]);
    // END_OF_INPUT once the second EndOfData arrived, though EndOfPartition has not been sent.
    expect(events.filter((e) => e.startsWith("EndOfData")).sort()).toEqual([
      "EndOfData@0",
      "EndOfData@1",
    ]);
    expect(reader.isEndOfData()).toBe(true);
    expect(reader.pollRecords(() => {})).toBe(PollStatus.END_OF_INPUT);
    partition.finish();
    while (!reader.pollToEndOfPartition()) await reader.getAvailableFuture();
    expect(events.filter((e) => e.startsWith("CheckpointBarrier")).sort()).toEqual([
      "CheckpointBarrier@0",
      "CheckpointBarrier@1",
    ]);
    expect(reader.isFinished()).toBe(true);
    reader.close();
    await gate.close();
    partition.close();

    // A producer that sends a record after its EndOfData breaks the protocol.
    const buffer = must(pool.createBufferPool(1, 1).requestBuffer());
    buffer.setSize(0);
    const items: BufferOrEvent[] = [
      { channelIndex: 0, event: new EndOfData(), moreAvailable: true, size: 5 },
      { channelIndex: 0, buffer, moreAvailable: false, size: 0 },
    ];
    const fake = {
      numberOfInputChannels: 2,
      pollNext: () => items.shift(),
      isFinished: () => false,
      isAvailable: () => true,
      getAvailableFuture: () => Promise.resolve(),
    } as unknown as InputGate;
    const broken = new RecordReader(fake, serializer);
    expect(() => broken.pollRecords(() => {})).toThrowError(
      expect.objectContaining({
        code: ErrorCodes.ILLEGAL_STATE,
        message: expect.stringContaining("channel 0 delivered data after EndOfData"),
      }),
    );
    expect(buffer.isRecycled()).toBe(true);
    broken.close();
  });

  it("fails clearly when a channel ends in the middle of a record", () => {
    pool = new NetworkBufferPool(4, 128);
    // A stream that announces a 200-byte record, carries 10 bytes of it, then ends.
    const buffer = must(pool.createBufferPool(1, 1).requestBuffer());
    const bytes = buffer.writableView();
    bytes.writeInt32BE(200, 0);
    buffer.setSize(14);
    const items: BufferOrEvent[] = [
      { channelIndex: 0, buffer, moreAvailable: true, size: 14 },
      { channelIndex: 0, event: EndOfPartitionEvent.INSTANCE, moreAvailable: false, size: 4 },
    ];
    const gate = {
      numberOfInputChannels: 1,
      pollNext: () => items.shift(),
      isFinished: () => items.length === 0,
      isAvailable: () => true,
      getAvailableFuture: () => Promise.resolve(),
    } as unknown as InputGate;
    const reader = new RecordReader(gate, serializer);
    let error: unknown;
    try {
      reader.pollRecords(() => {});
    } catch (e) {
      error = e;
    }
    expect((error as { code?: string }).code).toBe(ErrorCodes.CANCELLED);
    expect((error as Error).message).toMatch(/middle of a record/);
    reader.close();
    expect(buffer.isRecycled()).toBe(true);
  });

  it("delivers the same records into one reused object, and as in-place views, as pollRecords does", async () => {
    pool = new NetworkBufferPool(64, 128);
    /** A string box the reusing path refills; the serializer's payload is the string's bytes. */
    interface Box {
      text: string;
    }
    const boxes: TypeSerializer<Box> = {
      name: "box",
      serialize: (value, out) => out.writeBytes(Buffer.from(value.text)),
      deserialize: (input) => ({ text: boxText(input) }),
      deserializeInto: (reuse, input) => {
        reuse.text = boxText(input);
        return reuse;
      },
    };
    const long = "y".repeat(300); // spans buffers
    const produced = ["a", long, "bb", "ccc", long, "d"];
    const run = async (poll: (reader: RecordReader<Box>) => PollStatus) => {
      const { partition, gate } = wire(pool, 32);
      const reader = new RecordReader(gate, boxes);
      const producer = (async () => {
        for (const [i, value] of produced.entries()) {
          while (!partition.isAvailable()) await partition.getAvailableFuture();
          partition.emitRecord(frameRecord(Buffer.from(value)), i % 2);
        }
        partition.finish();
      })();
      let status: PollStatus = PollStatus.NOTHING_AVAILABLE;
      while (status !== PollStatus.END_OF_INPUT) {
        status = poll(reader);
        if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      }
      await producer;
      expect(reader.numRecordsIn.getCount()).toBe(produced.length);
      reader.close();
      await gate.close();
      partition.close();
    };
    const reuse: Box = { text: "" };
    const reused: string[] = [];
    await run((reader) =>
      reader.pollRecordsInto(reuse, (box) => {
        expect(box).toBe(reuse);
        reused.push(box.text);
      }),
    );
    const viewed: string[] = [];
    await run((reader) => reader.pollRecordViews((input) => viewed.push(boxText(input))));
    expect(reused.sort()).toEqual([...produced].sort());
    expect(viewed.sort()).toEqual([...produced].sort());
  });
});

function boxText(input: DataInputDeserializer): string {
  return Buffer.from(input.readFully(input.available())).toString("utf8");
}
