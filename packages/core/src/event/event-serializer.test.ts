import { describe, expect, it } from "vitest";
import { ErrorCodes, SerializationError } from "../errors.js";
import { FreeingBufferRecycler } from "../memory/buffer-recycler.js";
import { DataType } from "../memory/data-type.js";
import { expectError } from "../testing/index.js";
import { EventSerializer, EventTypeIds } from "./event-serializer.js";
import {
  CancelCheckpointMarker,
  CheckpointAlignment,
  CheckpointBarrier,
  type CheckpointOptions,
  DEFAULT_CHECKPOINT_OPTIONS,
  EndOfChannelStateEvent,
  EndOfData,
  EndOfPartitionEvent,
  EventAnnouncement,
  type RuntimeEvent,
  SnapshotType,
  StopMode,
  TaskEvent,
} from "./runtime-event.js";

/** Hex of bytes; the expected strings below are written by hand from Flink's event layouts. */
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const fromHex = (text: string) => new Uint8Array(Buffer.from(text.replace(/\s+/g, ""), "hex"));

function options(overrides: Partial<CheckpointOptions>): CheckpointOptions {
  return { ...DEFAULT_CHECKPOINT_OPTIONS, ...overrides } as CheckpointOptions;
}

const PLAIN_BARRIER = new CheckpointBarrier(1n, 2n);
// type 1 | id 1 | timestamp 2 | snapshot type 0 (checkpoint) | location −1 (default) | alignment 1 (ALIGNED) | timeout 0
const PLAIN_BARRIER_HEX =
  "00000001 0000000000000001 0000000000000002 00 ffffffff 01 0000000000000000".replace(/ /g, "");

function expectSerializationError(bytes: Uint8Array, ...fragments: string[]): void {
  expectError(
    () => EventSerializer.fromSerializedEvent(bytes),
    SerializationError,
    ErrorCodes.SERIALIZATION,
    ...fragments,
  );
}

describe("EventSerializer", () => {
  it("writes EndOfPartitionEvent as 00 00 00 00 and EndOfChannelStateEvent as 00 00 00 05", () => {
    expect(hex(EventSerializer.toSerializedEvent(EndOfPartitionEvent.INSTANCE))).toBe("00000000");
    expect(hex(EventSerializer.toSerializedEvent(EndOfChannelStateEvent.INSTANCE))).toBe(
      "00000005",
    );
    expect(EventSerializer.fromSerializedEvent(fromHex("00000000"))).toBe(
      EndOfPartitionEvent.INSTANCE,
    );
    expect(EventSerializer.fromSerializedEvent(fromHex("00000005"))).toBe(
      EndOfChannelStateEvent.INSTANCE,
    );
  });

  it("writes a plain checkpoint barrier to the default location in 34 bytes", () => {
    const bytes = EventSerializer.toSerializedEvent(PLAIN_BARRIER);
    expect(bytes).toHaveLength(34);
    expect(hex(bytes)).toBe(PLAIN_BARRIER_HEX);
    expect(EventSerializer.fromSerializedEvent(bytes)).toEqual(PLAIN_BARRIER);
  });

  it("writes a savepoint barrier with its format byte, location bytes, alignment and timeout", () => {
    const barrier = new CheckpointBarrier(
      -5n,
      1_700_000_000_000n,
      options({
        snapshotType: SnapshotType.SAVEPOINT_TERMINATE,
        savepointFormat: 1,
        targetLocation: Uint8Array.of(0xab, 0xcd, 0xef),
        alignment: CheckpointAlignment.FORCED_ALIGNED,
        alignedCheckpointTimeout: 30_000n,
      }),
    );
    const bytes = EventSerializer.toSerializedEvent(barrier);
    expect(hex(bytes)).toBe(
      [
        "00000001", // type id
        "fffffffffffffffb", // id −5
        "0000018bcfe56800", // timestamp 1 700 000 000 000 ms
        "03", // SAVEPOINT_TERMINATE
        "01", // native format
        "00000003", // location length
        "abcdef", // location
        "03", // FORCED_ALIGNED
        "0000000000007530", // 30 000 ms
      ].join(""),
    );
    expect(bytes).toHaveLength(34 + 1 + 3);
    expect(EventSerializer.fromSerializedEvent(bytes)).toEqual(barrier);
  });

  it("round-trips barriers of every snapshot type and alignment", () => {
    for (const snapshotType of [0, 1, 2, 3, 4] as SnapshotType[]) {
      for (const alignment of [0, 1, 2, 3] as CheckpointAlignment[]) {
        const isSavepoint = snapshotType >= 1 && snapshotType <= 3;
        const barrier = new CheckpointBarrier(
          2n ** 63n - 1n,
          -(2n ** 63n),
          options({
            snapshotType,
            alignment,
            targetLocation: snapshotType % 2 === 0 ? null : new Uint8Array(0),
            alignedCheckpointTimeout: BigInt(alignment) * 1000n,
            ...(isSavepoint ? { savepointFormat: (alignment % 2) as 0 | 1 } : {}),
          }),
        );
        const bytes = EventSerializer.toSerializedEvent(barrier);
        expect(bytes).toHaveLength(34 + (isSavepoint ? 1 : 0));
        expect(EventSerializer.fromSerializedEvent(bytes)).toEqual(barrier);
      }
    }
  });

  it("writes a savepoint without an explicit format as canonical (0)", () => {
    const barrier = new CheckpointBarrier(
      1n,
      2n,
      options({ snapshotType: SnapshotType.SAVEPOINT }),
    );
    const decoded = EventSerializer.fromSerializedEvent(EventSerializer.toSerializedEvent(barrier));
    expect((decoded as CheckpointBarrier).options.savepointFormat).toBe(0);
  });

  it("writes CancelCheckpointMarker as type 4 plus the checkpoint id", () => {
    const marker = new CancelCheckpointMarker(0x0102030405060708n);
    expect(hex(EventSerializer.toSerializedEvent(marker))).toBe("000000040102030405060708");
    expect(EventSerializer.fromSerializedEvent(fromHex("000000040102030405060708"))).toEqual(
      marker,
    );
  });

  it("writes EndOfData as type 8 plus the stop mode byte", () => {
    expect(hex(EventSerializer.toSerializedEvent(new EndOfData(StopMode.DRAIN)))).toBe(
      "0000000800",
    );
    expect(hex(EventSerializer.toSerializedEvent(new EndOfData(StopMode.NO_DRAIN)))).toBe(
      "0000000801",
    );
    expect(EventSerializer.fromSerializedEvent(fromHex("0000000801"))).toEqual(
      new EndOfData(StopMode.NO_DRAIN),
    );
  });

  it("writes a TaskEvent as type 3, a modified-UTF-8 class name, then its payload", () => {
    const event = new TaskEvent("a.B", Uint8Array.of(1, 2));
    expect(hex(EventSerializer.toSerializedEvent(event))).toBe(
      "00000003" + "0003" + "612e42" + "0102",
    );
    const exotic = new TaskEvent("é\u0000", new Uint8Array(0));
    expect(hex(EventSerializer.toSerializedEvent(exotic))).toBe("00000003" + "0004" + "c3a9c080");
    expect(EventSerializer.fromSerializedEvent(EventSerializer.toSerializedEvent(exotic))).toEqual(
      exotic,
    );
  });

  it("returns copies, not views, of a task event's payload and a barrier's location", () => {
    const bytes = EventSerializer.toSerializedEvent(new TaskEvent("x", Uint8Array.of(7)));
    const decoded = EventSerializer.fromSerializedEvent(bytes) as TaskEvent;
    bytes.fill(0);
    expect(Array.from(decoded.payload)).toEqual([7]);
  });

  it("writes an EventAnnouncement as type 6, the sequence number, then the announced event", () => {
    const announcement = new EventAnnouncement(PLAIN_BARRIER, 7);
    const bytes = EventSerializer.toSerializedEvent(announcement);
    expect(hex(bytes)).toBe(["00000006", "00000007", PLAIN_BARRIER_HEX].join(""));
    expect(EventSerializer.fromSerializedEvent(bytes)).toEqual(announcement);
  });

  it("fails an unknown type id with a SerializationError naming the id and the byte count", () => {
    expectSerializationError(fromHex("0000002a"), "unknown event type id 42", "4-byte event");
    expectSerializationError(fromHex("ffffffff 00"), "unknown event type id -1", "5-byte event");
    expectSerializationError(fromHex("00000009"), "type id 9 (EndOfSegmentEvent) is not supported");
  });

  it("fails truncated events naming the type id and how many bytes were missing", () => {
    const barrier = EventSerializer.toSerializedEvent(PLAIN_BARRIER);
    expectSerializationError(
      barrier.subarray(0, 30),
      "30-byte event with type id 1 (CheckpointBarrier)",
      "cannot read 8 bytes at position 26: only 4",
    );
    expectSerializationError(fromHex("000000"), "only 3 bytes were given");
    expectSerializationError(
      fromHex("00000004 000000"),
      "type id 4 (CancelCheckpointMarker)",
      "only 3",
    );
    expectSerializationError(
      fromHex("00000003 0005 6162"),
      "type id 3",
      "cannot read 5 bytes at position 6: only 2",
    );
  });

  it("fails trailing bytes and out-of-range enum bytes", () => {
    expectSerializationError(
      fromHex("00000000 00"),
      "type id 0 (EndOfPartitionEvent) has 1 unexpected trailing bytes",
    );
    expectSerializationError(fromHex("00000008 02"), "unknown stop mode 2");
    const badAlignment = EventSerializer.toSerializedEvent(PLAIN_BARRIER);
    badAlignment[25] = 9;
    expectSerializationError(badAlignment, "unknown alignment 9 at position 25");
    const badType = EventSerializer.toSerializedEvent(PLAIN_BARRIER);
    badType[20] = 5;
    expectSerializationError(badType, "unknown snapshot type 5 at position 20");
    const badLocation = EventSerializer.toSerializedEvent(PLAIN_BARRIER);
    badLocation.set([0xff, 0xff, 0xff, 0xfe], 21);
    expectSerializationError(badLocation, "negative location length -2 at position 21");
  });

  it("rejects events it cannot represent with IllegalArgumentError", () => {
    const bad: RuntimeEvent[] = [
      new CheckpointBarrier(2n ** 63n, 0n),
      new CancelCheckpointMarker(1 as unknown as bigint),
      new EndOfData(7 as StopMode),
      new EventAnnouncement(PLAIN_BARRIER, 2 ** 31),
      { kind: "Nope" } as unknown as RuntimeEvent,
    ];
    for (const event of bad) {
      expect(() => EventSerializer.toSerializedEvent(event)).toThrow(
        expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }),
      );
    }
  });

  it("chooses the buffer data type like Flink", () => {
    const type = (event: RuntimeEvent, priority = false) =>
      EventSerializer.dataTypeOf(event, priority);
    const barrier = (o: Partial<CheckpointOptions>) => new CheckpointBarrier(1n, 1n, options(o));
    expect(type(PLAIN_BARRIER)).toBe(DataType.ALIGNED_CHECKPOINT_BARRIER);
    expect(type(PLAIN_BARRIER, true)).toBe(DataType.PRIORITIZED_EVENT_BUFFER);
    expect(type(barrier({ alignedCheckpointTimeout: 1000n }))).toBe(
      DataType.TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER,
    );
    expect(type(barrier({ alignedCheckpointTimeout: 2n ** 63n - 1n }))).toBe(
      DataType.ALIGNED_CHECKPOINT_BARRIER,
    );
    expect(
      type(
        barrier({ alignment: CheckpointAlignment.FORCED_ALIGNED, alignedCheckpointTimeout: 5n }),
      ),
    ).toBe(DataType.ALIGNED_CHECKPOINT_BARRIER);
    expect(type(barrier({ alignment: CheckpointAlignment.UNALIGNED }))).toBe(DataType.EVENT_BUFFER);
    expect(type(barrier({ alignment: CheckpointAlignment.UNALIGNED }), true)).toBe(
      DataType.PRIORITIZED_EVENT_BUFFER,
    );
    expect(
      type(
        barrier({ alignment: CheckpointAlignment.UNALIGNED, snapshotType: SnapshotType.SAVEPOINT }),
      ),
    ).toBe(DataType.ALIGNED_CHECKPOINT_BARRIER);
    expect(type(barrier({ alignment: CheckpointAlignment.AT_LEAST_ONCE }))).toBe(
      DataType.EVENT_BUFFER,
    );
    expect(type(new EndOfData())).toBe(DataType.END_OF_DATA);
    expect(type(EndOfPartitionEvent.INSTANCE)).toBe(DataType.EVENT_BUFFER);
    expect(type(new CancelCheckpointMarker(1n))).toBe(DataType.EVENT_BUFFER);
    expect(type(new TaskEvent("t", new Uint8Array(0)))).toBe(DataType.EVENT_BUFFER);
  });

  it("toBuffer makes an exact-size unpooled buffer that fromBuffer decodes without recycling it", () => {
    const events: RuntimeEvent[] = [
      EndOfPartitionEvent.INSTANCE,
      PLAIN_BARRIER,
      new CancelCheckpointMarker(9n),
      new EndOfData(StopMode.NO_DRAIN),
      EndOfChannelStateEvent.INSTANCE,
      new TaskEvent("org.example.Event", Uint8Array.of(1, 2, 3)),
      new EventAnnouncement(PLAIN_BARRIER, 3),
    ];
    for (const event of events) {
      for (const priority of [false, true]) {
        const buffer = EventSerializer.toBuffer(event, priority);
        const bytes = EventSerializer.toSerializedEvent(event);
        expect(buffer.getSize()).toBe(bytes.length);
        expect(buffer.getMaxCapacity()).toBe(bytes.length);
        expect(buffer.getMemorySegment().size).toBe(bytes.length);
        expect(buffer.getRecycler()).toBe(FreeingBufferRecycler);
        expect(buffer.getDataType()).toBe(EventSerializer.dataTypeOf(event, priority));
        expect(buffer.isBuffer()).toBe(false);
        expect(hex(buffer.readableView())).toBe(hex(bytes));
        expect(EventSerializer.fromBuffer(buffer)).toEqual(event);
        expect(buffer.refCnt()).toBe(1);
        buffer.recycleBuffer();
      }
    }
  });

  it("fromBuffer reads from the buffer's reader index", () => {
    const buffer = EventSerializer.toBuffer(new CancelCheckpointMarker(3n), false);
    buffer.setReaderIndex(4);
    expectSerializationErrorFromBuffer(() => EventSerializer.fromBuffer(buffer));
    buffer.setReaderIndex(0);
    expect(EventSerializer.fromBuffer(buffer)).toEqual(new CancelCheckpointMarker(3n));
  });

  it("toBufferConsumer wraps the event in a finished consumer whose build() holds the bytes", () => {
    const consumer = EventSerializer.toBufferConsumer(new EndOfData(), false);
    expect(consumer.isBuilderFinished()).toBe(true);
    expect(consumer.getDataType()).toBe(DataType.END_OF_DATA);
    const built = consumer.build();
    expect(consumer.isFinished()).toBe(true);
    expect(EventSerializer.fromBuffer(built)).toEqual(new EndOfData());
    built.recycleBuffer();
    consumer.close();
    expect(built.isRecycled()).toBe(true);
    const priority = EventSerializer.toBufferConsumer(PLAIN_BARRIER, true);
    expect(priority.getDataType()).toBe(DataType.PRIORITIZED_EVENT_BUFFER);
    priority.close();
  });

  it("keeps Flink's event type ids", () => {
    expect(EventTypeIds).toEqual({
      END_OF_PARTITION: 0,
      CHECKPOINT_BARRIER: 1,
      END_OF_SUPERSTEP: 2,
      OTHER: 3,
      CANCEL_CHECKPOINT_MARKER: 4,
      END_OF_CHANNEL_STATE: 5,
      ANNOUNCEMENT: 6,
      VIRTUAL_CHANNEL_SELECTOR: 7,
      END_OF_DATA: 8,
      END_OF_SEGMENT: 9,
      RECOVERY_METADATA: 10,
      WATERMARK: 11,
    });
  });
});

function expectSerializationErrorFromBuffer(action: () => unknown): void {
  expect(action).toThrow(expect.objectContaining({ code: ErrorCodes.SERIALIZATION }));
}
