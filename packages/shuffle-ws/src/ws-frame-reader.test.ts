import { describe, expect, it } from "vitest";
import { frameHeader, Opcode } from "./ws-frame-header.js";
import { WsFrameReader } from "./ws-frame-reader.js";

/** A whole unmasked frame: header and payload. */
function frame(opcode: number, payload: Buffer, fin = true): Buffer {
  return Buffer.concat([frameHeader(payload.length, opcode, fin), payload]);
}

/** `length` bytes that differ from one position to the next. */
function bytes(length: number, seed: number): Buffer {
  return Buffer.from(Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff));
}

/** A reader and what it handed on. */
function reader(maxPayload = 1 << 20) {
  const payload: Buffer[] = [];
  const toWs: Buffer[] = [];
  const r = new WsFrameReader({
    maxPayload,
    // Copied: a slice is valid only during the call.
    onPayload: (chunk) => payload.push(Buffer.from(chunk)),
    toWs: (b) => toWs.push(b),
  });
  return {
    /** Reads `stream` in reads of the given sizes (the rest in one last read). */
    read(stream: Buffer, sizes: readonly number[] = []): void {
      let offset = 0;
      for (const size of sizes) {
        if (offset >= stream.length) break;
        // One reused buffer for every read, overwritten afterwards, as a socket's onread one.
        const scratch = Buffer.from(stream.subarray(offset, offset + size));
        r.read(scratch);
        scratch.fill(0xee);
        offset += size;
      }
      if (offset < stream.length) r.read(Buffer.from(stream.subarray(offset)));
    },
    payload: () => Buffer.concat(payload),
    slices: payload,
    toWs: () => Buffer.concat(toWs),
    toWsCalls: toWs,
  };
}

describe("WsFrameReader", () => {
  // Every length encoding, an empty frame, and a fragmented message with a ping between its
  // fragments (control frames may come between the fragments of a message).
  const data = [bytes(0, 1), bytes(125, 2), bytes(126, 3), bytes(70_000, 4), bytes(100, 5)];
  const ping = frame(Opcode.PING, Buffer.from("are you there"));
  const continuation = bytes(50, 6);
  const stream = Buffer.concat([
    ...data.map((d) => frame(Opcode.BINARY, d)),
    frame(Opcode.BINARY, bytes(30, 7), false),
    ping,
    frame(Opcode.CONTINUATION, continuation),
  ]);
  const expectedPayload = Buffer.concat([...data, bytes(30, 7), continuation]);

  it("hands binary payloads over in order and the ping to ws whole, when the stream comes in one read", () => {
    const r = reader();
    r.read(stream);
    expect(r.payload().equals(expectedPayload)).toBe(true);
    expect(r.toWsCalls).toEqual([ping]);
  });

  it("does the same whatever the reads' sizes: 1, 2, 3, 7 and 64 KiB bytes at a time, and random", () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return 1 + (seed % 5000);
    };
    const splits: number[][] = [
      Array(stream.length).fill(1),
      Array(stream.length).fill(2),
      Array(stream.length).fill(3),
      Array(stream.length).fill(7),
      Array(4).fill(64 * 1024),
      Array.from({ length: 200 }, random),
    ];
    for (const sizes of splits) {
      const r = reader();
      r.read(stream, sizes);
      expect(r.payload().equals(expectedPayload)).toBe(true);
      // The ping reaches ws as one call, however it was split.
      expect(r.toWsCalls).toEqual([ping]);
    }
  });

  it("hands a payload over as slices of each read, without joining a frame that spans two reads", () => {
    const r = reader();
    const payload = bytes(40_000, 8);
    const whole = frame(Opcode.BINARY, payload);
    r.read(whole, [10_000]);
    expect(r.slices.map((slice) => slice.length)).toEqual([10_000 - 4, 30_004]);
    expect(r.payload().equals(payload)).toBe(true);
  });

  it("hands a pong and a close frame to ws, and from the close frame on every byte", () => {
    const r = reader();
    const pong = frame(Opcode.PONG, Buffer.alloc(0));
    const close = frame(Opcode.CLOSE, Buffer.from([0x03, 0xe8, 0x62, 0x79, 0x65]));
    const after = frame(Opcode.BINARY, bytes(20, 9));
    r.read(Buffer.concat([frame(Opcode.BINARY, bytes(5, 10)), pong, close, after]), [3, 4, 5]);
    expect(r.payload().equals(bytes(5, 10))).toBe(true);
    expect(r.toWsCalls[0]).toEqual(pong);
    expect(r.toWs().equals(Buffer.concat([pong, close, after]))).toBe(true);
  });

  describe("hands everything from a frame it does not take on to ws, unread", () => {
    const before = frame(Opcode.BINARY, bytes(9, 11));
    const after = frame(Opcode.BINARY, bytes(33, 12));
    const masked = frame(Opcode.BINARY, bytes(4, 13));
    masked[1] = (masked[1] as number) | 0x80;
    const rsv1 = frame(Opcode.BINARY, bytes(4, 14));
    rsv1[0] = (rsv1[0] as number) | 0x40;
    const cases: [string, Buffer][] = [
      ["a text frame", frame(Opcode.TEXT, Buffer.from("hello"))],
      ["a masked frame (a server must not mask)", masked],
      ["a frame with RSV1 set (no extension was negotiated)", rsv1],
      ["an unknown opcode", frame(0x3, bytes(4, 15))],
      ["a fragmented control frame", frame(Opcode.PING, bytes(4, 16), false)],
      ["a control frame over 125 bytes", frame(Opcode.PING, bytes(126, 17))],
      ["a continuation frame with no message open", frame(Opcode.CONTINUATION, bytes(4, 18))],
      [
        "a binary frame while a message is open",
        Buffer.concat([
          frame(Opcode.BINARY, bytes(3, 19), false),
          frame(Opcode.BINARY, bytes(4, 20)),
        ]),
      ],
    ];
    for (const [name, bad] of cases) {
      it(name, () => {
        for (const sizes of [[], Array(200).fill(1)]) {
          const r = reader();
          r.read(Buffer.concat([before, bad, after]), sizes);
          // The open message's first fragment (last case) was data: it was handed over.
          const taken = name.startsWith("a binary frame while") ? 9 + 3 : 9;
          expect(r.payload().length).toBe(taken);
          const handed = name.startsWith("a binary frame while")
            ? Buffer.concat([frame(Opcode.BINARY, bytes(4, 20)), after])
            : Buffer.concat([bad, after]);
          expect(r.toWs().equals(handed)).toBe(true);
        }
      });
    }
  });

  it("takes a message of exactly maxPayload bytes and hands the frame that would pass it to ws", () => {
    const fits = reader(100);
    fits.read(
      Buffer.concat([
        frame(Opcode.BINARY, bytes(60, 21), false),
        frame(Opcode.CONTINUATION, bytes(40, 22)),
      ]),
    );
    expect(fits.payload().length).toBe(100);
    expect(fits.toWsCalls).toEqual([]);

    const tooLong = reader(100);
    const second = frame(Opcode.CONTINUATION, bytes(41, 24));
    tooLong.read(Buffer.concat([frame(Opcode.BINARY, bytes(60, 23), false), second]));
    expect(tooLong.payload().length).toBe(60);
    expect(tooLong.toWs().equals(second)).toBe(true);

    const single = reader(100);
    const big = frame(Opcode.BINARY, bytes(101, 25));
    single.read(big);
    expect(single.payload().length).toBe(0);
    expect(single.toWs().equals(big)).toBe(true);
  });

  it("hands a 64-bit length of 2^53 or more to ws", () => {
    const r = reader(Number.MAX_SAFE_INTEGER);
    const header = Buffer.from([0x82, 127, 0x00, 0x20, 0, 0, 0, 0, 0, 0]);
    r.read(header);
    expect(r.toWs().equals(header)).toBe(true);
  });
});
