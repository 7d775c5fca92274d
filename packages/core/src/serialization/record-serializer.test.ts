import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ErrorCodes, RecordTooLargeError } from "../errors.js";
import { expectError } from "../testing/index.js";
import { BytesSerializer } from "./bytes-serializer.js";
import { DataOutputSerializer } from "./data-output-serializer.js";
import { Int32Serializer } from "./int32-serializer.js";
import {
  frameRecord,
  MAX_RECORD_SIZE_KEY,
  MIN_TAIL_BYTES,
  serializeRecord,
  serializeRecordHead,
} from "./record-serializer.js";
import { StringSerializer } from "./string-serializer.js";

describe("serializeRecord", () => {
  it("frames a record as a big-endian int32 payload length followed by the payload", () => {
    const out = new DataOutputSerializer();
    const framed = serializeRecord("abc", StringSerializer.INSTANCE, out);
    // length 7 = StringSerializer's own 4-byte count + 3 bytes
    expect(Buffer.from(framed).toString("hex")).toBe("00000007" + "00000003616263");
  });

  it("frames an empty payload as four zero bytes", () => {
    const empty = { name: "empty", serialize() {}, deserialize: () => undefined };
    const framed = serializeRecord(undefined, empty, new DataOutputSerializer());
    expect(Array.from(framed)).toEqual([0, 0, 0, 0]);
  });

  it("clears the output first and returns a view of it (no copy)", () => {
    const out = new DataOutputSerializer();
    out.writeLong(-1n);
    const framed = serializeRecord(0x01020304, Int32Serializer.INSTANCE, out);
    expect(Buffer.from(framed).toString("hex")).toBe("0000000401020304");
    expect(framed.buffer).toBe(out.getSharedBuffer().buffer);
    expect(out.length).toBe(8);
  });

  it("fails a payload above the maximum record size naming the size, the limit and the config key", () => {
    const error = expectError(
      () =>
        serializeRecord(
          new Uint8Array(97),
          BytesSerializer.INSTANCE,
          new DataOutputSerializer(),
          100,
        ),
      RecordTooLargeError,
      ErrorCodes.RECORD_TOO_LARGE,
    );
    expect(error.message).toContain("record of 101 bytes");
    expect(error.message).toContain("maximum record size of 100 bytes");
    expect(error.message).toContain(`'${MAX_RECORD_SIZE_KEY}'`);
    // Exactly at the limit is fine.
    expect(
      serializeRecord(
        new Uint8Array(96),
        BytesSerializer.INSTANCE,
        new DataOutputSerializer(),
        100,
      ),
    ).toHaveLength(104);
  });

  it("passes a serializer's validation error through unchanged", () => {
    expect(() =>
      serializeRecord(1.5, Int32Serializer.INSTANCE, new DataOutputSerializer()),
    ).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }));
  });

  it("rejects an invalid maximum record size", () => {
    expect(() =>
      serializeRecord(1, Int32Serializer.INSTANCE, new DataOutputSerializer(), 2 ** 31),
    ).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }));
  });
});

describe("serializeRecordHead", () => {
  it("frames the same bytes as serializeRecord: the output's bytes, then the tail", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 3 * MIN_TAIL_BYTES }),
        fc.uint8Array({ maxLength: 16 }),
        (value, previous) => {
          const out = new DataOutputSerializer();
          out.writeBytes(previous); // what the last record left is cleared first
          const tail = serializeRecordHead(value, BytesSerializer.INSTANCE, out);
          const framed = Buffer.concat([out.getSharedBuffer(), tail]);
          const whole = serializeRecord(
            value,
            BytesSerializer.INSTANCE,
            new DataOutputSerializer(),
          );
          expect(framed.toString("hex")).toBe(Buffer.from(whole).toString("hex"));
        },
      ),
    );
  });

  it("returns a tail of MIN_TAIL_BYTES or more as the value's own bytes, copied nowhere", () => {
    const value = new Uint8Array(MIN_TAIL_BYTES);
    const out = new DataOutputSerializer();
    const tail = serializeRecordHead(value, BytesSerializer.INSTANCE, out);
    expect(tail).toBe(value);
    // The length of the frame and the byte array's own length: the bytes stay out.
    expect(out.length).toBe(8);
    expect(out.getSharedBuffer().readInt32BE(0)).toBe(4 + MIN_TAIL_BYTES);
  });

  it("copies a shorter tail into the output, leaving the whole record there", () => {
    const value = Uint8Array.of(1, 2, 3);
    const out = new DataOutputSerializer();
    expect(serializeRecordHead(value, BytesSerializer.INSTANCE, out)).toHaveLength(0);
    expect(out.getSharedBuffer().toString("hex")).toBe("00000007" + "00000003010203");
  });

  it("counts the tail towards the maximum record size", () => {
    const limit = MIN_TAIL_BYTES + 4;
    const error = expectError(
      () =>
        serializeRecordHead(
          new Uint8Array(limit - 3),
          BytesSerializer.INSTANCE,
          new DataOutputSerializer(),
          limit,
        ),
      RecordTooLargeError,
      ErrorCodes.RECORD_TOO_LARGE,
    );
    expect(error.message).toContain(`record of ${limit + 1} bytes`);
    expect(
      serializeRecordHead(
        new Uint8Array(limit - 4),
        BytesSerializer.INSTANCE,
        new DataOutputSerializer(),
        limit,
      ),
    ).toHaveLength(limit - 4);
  });

  it("rejects what BytesSerializer.serialize rejects", () => {
    expect(() =>
      serializeRecordHead(
        "not bytes" as unknown as Uint8Array,
        BytesSerializer.INSTANCE,
        new DataOutputSerializer(),
      ),
    ).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }));
  });
});

describe("frameRecord", () => {
  it("frames serialized bytes exactly as serializeRecord frames the value", () => {
    const payload = Uint8Array.of(0, 0, 0, 3, 0x61, 0x62, 0x63);
    const framed = frameRecord(payload);
    expect(Buffer.from(framed).toString("hex")).toBe("00000007" + "00000003616263");
    expect(framed).toEqual(
      serializeRecord("abc", StringSerializer.INSTANCE, new DataOutputSerializer()),
    );
    expect(Array.from(frameRecord(new Uint8Array(0)))).toEqual([0, 0, 0, 0]);
  });
});
