import { crc32 as zlibCrc32 } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { crc32, loadCrc32 } from "./crc32.js";

describe("crc32", () => {
  it("is zlib's CRC32, also when continued over the pieces of a stream split anywhere", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), fc.nat(), (data, at) => {
        const cut = data.length === 0 ? 0 : at % (data.length + 1);
        const whole = zlibCrc32(data);
        expect(crc32(data)).toBe(whole);
        expect(crc32(data.subarray(cut), crc32(data.subarray(0, cut)))).toBe(whole);
      }),
    );
    // The check value of CRC-32/ISO-HDLC.
    expect(crc32(Buffer.from("123456789"))).toBe(0xcbf43926);
  });

  it("uses the native binding where it loads, and zlib's where it does not", () => {
    expect(crc32).not.toBe(zlibCrc32);
    expect(loadCrc32("@sluice/no-such-binding")).toBe(zlibCrc32);
  });
});
