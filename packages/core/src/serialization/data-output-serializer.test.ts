import { describe, expect, it } from "vitest";
import { ErrorCodes, IllegalArgumentError, RecordTooLargeError } from "../errors.js";
import { expectError } from "../testing/index.js";
import { DataInputDeserializer } from "./data-input-deserializer.js";
import { DataOutputSerializer } from "./data-output-serializer.js";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

describe("DataOutputSerializer", () => {
  it("writes every primitive big-endian with Java's DataOutput byte layout", () => {
    const out = new DataOutputSerializer({ initialCapacity: 1 });
    out.writeByte(0x1ff); // low 8 bits
    out.writeBoolean(true);
    out.writeBoolean(false);
    out.writeShort(-2);
    out.writeChar(0x20ac);
    out.writeInt(0x01020304);
    out.writeInt(-1);
    out.writeLong(0x0102030405060708n);
    out.writeLong(-(2n ** 63n));
    out.writeFloat(1.5);
    out.writeDouble(-0);
    out.writeBytes(Uint8Array.of(9, 8, 7, 6), 1, 2);
    expect(hex(out.getSharedBuffer())).toBe(
      [
        "ff",
        "01",
        "00",
        "fffe",
        "20ac",
        "01020304",
        "ffffffff",
        "0102030405060708",
        "8000000000000000",
        "3fc00000",
        "8000000000000000",
        "0807",
      ].join(""),
    );
    expect(out.length).toBe(1 + 1 + 1 + 2 + 2 + 4 + 4 + 8 + 8 + 4 + 8 + 2);
  });

  it("writes the low 64 bits of a bigint beyond the int64 range, like Java's long cast", () => {
    const out = new DataOutputSerializer();
    out.writeLong(2n ** 64n + 5n);
    expect(hex(out.getSharedBuffer())).toBe("0000000000000005");
  });

  it("grows by doubling and keeps everything written", () => {
    const out = new DataOutputSerializer({ initialCapacity: 4 });
    for (let i = 0; i < 100; i++) out.writeInt(i);
    expect(out.length).toBe(400);
    expect(out.capacity).toBe(512);
    const input = new DataInputDeserializer(out.getSharedBuffer());
    for (let i = 0; i < 100; i++) expect(input.readInt()).toBe(i);
  });

  it("keeps its bytes at the alignment it was given, also after growing, and rejects one outside 0..7", () => {
    for (let alignment = 0; alignment < 8; alignment++) {
      const out = new DataOutputSerializer({ initialCapacity: 4, alignment });
      out.writeInt(7);
      expect(out.getSharedBuffer().byteOffset & 7).toBe(alignment);
      for (let i = 0; i < 100; i++) out.writeInt(i);
      expect(out.capacity).toBeGreaterThan(4);
      expect(out.getSharedBuffer().byteOffset & 7).toBe(alignment);
      const input = new DataInputDeserializer(out.getSharedBuffer());
      expect(input.readInt()).toBe(7);
      for (let i = 0; i < 100; i++) expect(input.readInt()).toBe(i);
    }
    for (const alignment of [-1, 8, 1.5]) {
      expect(() => new DataOutputSerializer({ alignment })).toThrow(IllegalArgumentError);
    }
  });

  it("hands out one shared view per length and buffer, always of the bytes just written", () => {
    const out = new DataOutputSerializer({ initialCapacity: 8 });
    out.writeInt(1);
    const first = out.getSharedBuffer();
    out.clear();
    out.writeInt(2);
    const second = out.getSharedBuffer();
    // Same length, same backing buffer: the view object is reused (no allocation per record).
    expect(second).toBe(first);
    expect(hex(second)).toBe("00000002");
    out.clear();
    out.writeShort(3);
    expect(hex(out.getSharedBuffer())).toBe("0003");
    out.clear();
    out.writeInt(4);
    out.writeLong(5n); // grows: a new backing buffer, so a new view
    const grown = out.getSharedBuffer();
    expect(hex(grown)).toBe("000000040000000000000005");
    out.clear();
    out.writeLong(6n);
    out.writeInt(7);
    expect(out.getSharedBuffer()).toBe(grown);
    expect(hex(grown)).toBe("000000000000000600000007");
  });

  it("throws RecordTooLargeError naming the sizes when a write would pass maxSize", () => {
    const out = new DataOutputSerializer({ initialCapacity: 4, maxSize: 10 });
    out.writeLong(1n);
    const error = expectError(
      () => out.writeInt(1),
      RecordTooLargeError,
      ErrorCodes.RECORD_TOO_LARGE,
    );
    expect(error.message).toContain("needs 12 bytes, more than the maximum of 10 bytes");
    // Growth is capped at maxSize, so a write that fits exactly still succeeds.
    out.writeShort(7);
    expect(out.length).toBe(10);
  });

  it("patches a reserved length with writeIntAt and rejects patches outside what was written", () => {
    const out = new DataOutputSerializer();
    out.skipBytesToWrite(4);
    out.writeBytes(Uint8Array.of(1, 2, 3));
    out.writeIntAt(0, out.length - 4);
    expect(hex(out.getSharedBuffer())).toBe("00000003010203");
    expect(() => out.writeIntAt(4, 0)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }),
    );
  });

  it("shares the buffer without a copy and copies on request", () => {
    const out = new DataOutputSerializer();
    out.writeInt(1);
    const shared = out.getSharedBuffer();
    const copy = out.copyOfBuffer();
    out.writeIntAt(0, 2);
    expect(hex(shared)).toBe("00000002");
    expect(hex(copy)).toBe("00000001");
    expect(copy).toBeInstanceOf(Uint8Array);
  });

  it("clear() and setPosition() move the write position and keep the capacity", () => {
    const out = new DataOutputSerializer({ initialCapacity: 8 });
    out.writeLong(-1n);
    out.clear();
    expect(out.length).toBe(0);
    out.writeByte(1);
    out.setPosition(20);
    expect(out.length).toBe(20);
    expect(out.capacity).toBeGreaterThanOrEqual(20);
    expect(() => out.setPosition(-1)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }),
    );
  });

  it("rejects a byte range outside the source", () => {
    const out = new DataOutputSerializer();
    expect(() => out.writeBytes(Uint8Array.of(1, 2), 1, 2)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }),
    );
  });

  it("writes Java modified UTF-8: NUL as C0 80, supplementary characters as two 3-byte surrogates", () => {
    const out = new DataOutputSerializer();
    out.writeUTF("A\u0000é€😀");
    // 2-byte length 0x0e (1+2+2+3+3+3), 'A', C0 80, C3 A9, E2 82 AC, ED A0 BD (U+D83D), ED B8 80 (U+DE00)
    expect(hex(out.getSharedBuffer())).toBe("000e41c080c3a9e282aceda0bdedb880");
  });

  it("rejects a modified-UTF-8 string longer than 65535 bytes", () => {
    const out = new DataOutputSerializer();
    out.writeUTF("x".repeat(65535));
    expect(out.length).toBe(65537);
    expect(() => out.writeUTF("é".repeat(32768))).toThrow(/65536 bytes of modified UTF-8/);
  });

  it("writes strings as an int32 byte count then UTF-8, short and long alike", () => {
    const out = new DataOutputSerializer({ initialCapacity: 2 });
    out.writeString("h€");
    expect(hex(out.getSharedBuffer())).toBe("0000000468e282ac");
    const long = "€".repeat(5000);
    out.clear();
    out.writeString(long);
    expect(out.getSharedBuffer().readInt32BE(0)).toBe(15000);
    expect(out.length).toBe(15004);
    expect(out.getSharedBuffer().toString("utf8", 4)).toBe(long);
  });
});
