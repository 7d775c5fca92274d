import { describe, expect, it } from "vitest";
import { copyBytes, copyOutOfSharedMemory } from "./shared-memory-copy.js";

function sharedBytes(length: number): Buffer {
  const bytes = Buffer.from(new SharedArrayBuffer(length));
  for (let i = 0; i < length; i++) bytes[i] = (i * 7 + 3) & 0xff;
  return bytes;
}

describe("copyOutOfSharedMemory", () => {
  it("copies bytes of shared memory into memory of its own, starting at the source's offset modulo 8", () => {
    const memory = sharedBytes(64 * 1024);
    // Small (slab) and large copies, at every offset modulo 8 and then some.
    for (const length of [1, 7, 100, 4095, 4096, 20_000]) {
      for (let offset = 0; offset < 16; offset++) {
        const source = memory.subarray(offset, offset + length);
        const copy = copyOutOfSharedMemory(source);
        expect(Buffer.isBuffer(copy)).toBe(true);
        expect(copy.buffer).not.toBeInstanceOf(SharedArrayBuffer);
        expect(copy.byteOffset % 8, `offset ${offset}, ${length} bytes`).toBe(
          source.byteOffset % 8,
        );
        expect(copy.equals(source)).toBe(true);
      }
    }
  });

  it("hands out copies that do not overlap, and that later writes to the source do not change", () => {
    const memory = sharedBytes(1024);
    const copies = [3, 100, 5, 250, 77].map((offset) => ({
      offset,
      copy: copyOutOfSharedMemory(memory.subarray(offset, offset + 100)),
    }));
    memory.fill(0);
    for (const { offset, copy } of copies) {
      expect(copy.equals(sharedBytes(1024).subarray(offset, offset + 100))).toBe(true);
    }
  });

  it("copies bytes of ordinary memory as Buffer.from does", () => {
    const source = Buffer.from("a record of ordinary memory");
    const copy = copyOutOfSharedMemory(source.subarray(2, 8));
    source.fill(0x2e);
    expect(copy.toString()).toBe("record");
  });
});

describe("copyBytes", () => {
  it("copies between shared and ordinary memory, both ways, at every mismatch of alignment and across bounce-buffer passes", () => {
    const shared = sharedBytes(200_000);
    const ordinary = Buffer.alloc(200_000);
    for (const length of [0, 17, 255, 256, 1000, 32_768, 150_001]) {
      for (const [sourceStart, targetStart] of [
        [0, 0],
        [3, 0],
        [4, 9],
        [13, 6],
      ] as const) {
        const where = `${length} bytes from ${sourceStart} to ${targetStart}`;
        ordinary.fill(0);
        copyBytes(shared, ordinary, targetStart, sourceStart, sourceStart + length);
        expect(
          ordinary
            .subarray(targetStart, targetStart + length)
            .equals(shared.subarray(sourceStart, sourceStart + length)),
          `into ordinary memory: ${where}`,
        ).toBe(true);
        // Nothing around the range was written.
        expect(ordinary[targetStart + length] ?? 0, where).toBe(0);
        const back = sharedBytes(200_000).fill(0);
        copyBytes(ordinary, back, sourceStart, targetStart, targetStart + length);
        expect(
          back
            .subarray(sourceStart, sourceStart + length)
            .equals(shared.subarray(sourceStart, sourceStart + length)),
          `into shared memory: ${where}`,
        ).toBe(true);
        expect(back[sourceStart + length] ?? 0, where).toBe(0);
      }
    }
  });
});
