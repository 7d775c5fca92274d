import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ErrorCodes, SerializationError } from "../errors.js";
import { expectError } from "../testing/index.js";
import { DataInputDeserializer } from "./data-input-deserializer.js";
import { DataOutputSerializer } from "./data-output-serializer.js";

describe("DataInputDeserializer", () => {
  it("reads longs from each new array it is pointed at, also after a trusted switch", () => {
    const out = new DataOutputSerializer({ initialCapacity: 4 }); // grows while writing longs
    out.writeLong(-2n);
    out.writeLong(2n ** 62n);
    const first = Buffer.from(out.getSharedBuffer());
    const second = Buffer.alloc(80);
    second.writeBigInt64BE(7n, 72);
    const input = new DataInputDeserializer(first);
    expect(input.readLong()).toBe(-2n);
    input.setTrustedBuffer(second, 72, 80);
    expect(input.readLong()).toBe(7n);
    input.setBuffer(first, 8);
    expect(input.readLong()).toBe(2n ** 62n);
    input.releaseBuffer();
    expect(() => input.readLong()).toThrow(SerializationError);
  });

  it("reads bytes into a caller's array, short runs and long ones, and checks the range", () => {
    const bytes = new Uint8Array(1000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7) & 0xff;
    const input = new DataInputDeserializer(bytes, 1);
    const target = new Uint8Array(1002);
    input.readFullyInto(target, 2, 10); // below the loop threshold
    input.readFullyInto(target, 12, 900); // above it
    expect([...target.subarray(2, 912)]).toEqual([...bytes.subarray(1, 911)]);
    expect(input.position).toBe(911);
    expect(() => input.readFullyInto(target, 1000, 3)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }),
    );
    expect(() => input.readFullyInto(target, 0, 100)).toThrow(SerializationError);
    expect(input.position).toBe(911);
  });

  it("reads back every primitive the output wrote", () => {
    const out = new DataOutputSerializer();
    out.writeByte(-3);
    out.writeByte(250);
    out.writeBoolean(true);
    out.writeShort(-300);
    out.writeShort(65000);
    out.writeChar(0x20ac);
    out.writeInt(-123456789);
    out.writeLong(2n ** 63n - 1n);
    out.writeFloat(0.25);
    out.writeDouble(Math.PI);
    out.writeUTF("class.Name");
    out.writeString("ünï");
    out.writeBytes(Uint8Array.of(4, 5, 6));
    const input = new DataInputDeserializer(out.getSharedBuffer());
    expect(input.readByte()).toBe(-3);
    expect(input.readUnsignedByte()).toBe(250);
    expect(input.readBoolean()).toBe(true);
    expect(input.readShort()).toBe(-300);
    expect(input.readUnsignedShort()).toBe(65000);
    expect(input.readChar()).toBe(0x20ac);
    expect(input.readInt()).toBe(-123456789);
    expect(input.readLong()).toBe(2n ** 63n - 1n);
    expect(input.readFloat()).toBe(0.25);
    expect(input.readDouble()).toBe(Math.PI);
    expect(input.readUTF()).toBe("class.Name");
    expect(input.readString()).toBe("ünï");
    expect(input.available()).toBe(3);
    input.skipBytes(1);
    expect(Array.from(input.readFully(2))).toEqual([5, 6]);
    expect(input.available()).toBe(0);
  });

  it("reads only inside the window given to setBuffer and reports absolute positions", () => {
    const bytes = Uint8Array.of(0xaa, 0, 0, 0, 7, 0xbb);
    const input = new DataInputDeserializer();
    input.setBuffer(bytes, 1, 5);
    expect(input.position).toBe(1);
    expect(input.readInt()).toBe(7);
    expect(input.position).toBe(5);
    expect(() => input.readByte()).toThrow(
      expect.objectContaining({ code: ErrorCodes.SERIALIZATION }),
    );
    expect(() => input.setBuffer(bytes, 4, 7)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }),
    );
  });

  it("says how many bytes were needed and available at which position when input runs out", () => {
    const input = new DataInputDeserializer(Uint8Array.of(1, 2, 3, 4, 5));
    input.readByte();
    const error = expectError(() => input.readLong(), SerializationError, ErrorCodes.SERIALIZATION);
    expect(error.message).toContain("cannot read 8 bytes at position 1: only 4");
    // A failed read consumes nothing.
    expect(input.position).toBe(1);
  });

  it("returns readFully as a view of the input, not a copy", () => {
    const bytes = Uint8Array.of(1, 2, 3);
    const view = new DataInputDeserializer(bytes).readFully(2);
    bytes[0] = 9;
    expect(Array.from(view)).toEqual([9, 2]);
  });

  it("rejects a negative string length and a truncated string", () => {
    const input = new DataInputDeserializer(Uint8Array.of(0xff, 0xff, 0xff, 0xff));
    expect(() => input.readString()).toThrow(/negative string length -1 at position 0/);
    const truncated = new DataInputDeserializer(Uint8Array.of(0, 0, 0, 5, 0x61));
    expect(() => truncated.readString()).toThrow(/cannot read 5 bytes at position 4: only 1/);
  });

  it("rejects malformed modified UTF-8 with the position", () => {
    expect(() => new DataInputDeserializer(Uint8Array.of(0, 2, 0xc3, 0x41)).readUTF()).toThrow(
      /malformed modified UTF-8 at position 2/,
    );
    expect(() => new DataInputDeserializer(Uint8Array.of(0, 1, 0xf0)).readUTF()).toThrow(
      /invalid lead byte 0xf0/,
    );
    expect(() => new DataInputDeserializer(Uint8Array.of(0, 2, 0xe2, 0x82)).readUTF()).toThrow(
      /truncated 3-byte sequence/,
    );
  });

  it("round-trips any JS string through modified UTF-8, lone surrogates included", () => {
    const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
    fc.assert(
      fc.property(fc.string({ unit: anyUnit, maxLength: 300 }), (value) => {
        const out = new DataOutputSerializer();
        out.writeUTF(value);
        const input = new DataInputDeserializer(out.getSharedBuffer());
        expect(input.readUTF()).toBe(value);
        expect(input.available()).toBe(0);
      }),
    );
  });
});
