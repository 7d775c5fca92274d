import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { frameHeader, Opcode } from "./ws-frame-header.js";

/** Payload lengths at each edge of the three length encodings. */
const LENGTHS = [0, 1, 125, 126, 127, 0xffff, 0x10000, 70_000];

let server: WebSocketServer | undefined;

afterEach(async () => {
  const s = server;
  server = undefined;
  if (s === undefined) return;
  for (const client of s.clients) client.terminate();
  await new Promise((resolve) => s.close(resolve));
});

describe("frameHeader", () => {
  it("frames payloads written in chunks straight to a server's socket as whole binary messages a ws client reads", async () => {
    const payloads = LENGTHS.map((length) =>
      Buffer.from(Uint8Array.from({ length }, (_, i) => (i * 7 + length) & 0xff)),
    );
    const s = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    server = s;
    await new Promise((resolve) => s.once("listening", resolve));
    s.on("connection", (_ws, request) => {
      for (const payload of payloads) {
        // Header, then the payload in two chunks: what WsConnection writes for a BufferResponse.
        const half = payload.length >> 1;
        request.socket.write(frameHeader(payload.length));
        request.socket.write(payload.subarray(0, half));
        request.socket.write(payload.subarray(half));
      }
    });
    const received: { data: Buffer; isBinary: boolean }[] = [];
    const client = new WebSocket(`ws://127.0.0.1:${(s.address() as { port: number }).port}`);
    client.on("message", (data: Buffer, isBinary: boolean) => received.push({ data, isBinary }));
    const errors: Error[] = [];
    client.on("error", (error) => errors.push(error));
    await expect.poll(() => received.length + errors.length).toBe(payloads.length);
    expect(errors).toEqual([]);
    received.forEach(({ data, isBinary }, i) => {
      expect(isBinary).toBe(true);
      expect(data.equals(payloads[i] as Buffer)).toBe(true);
    });
    client.terminate();
  });

  it("encodes the length in 7, 16 or 64 bits, big-endian, after FIN and the binary opcode", () => {
    expect([...frameHeader(125)]).toEqual([0x82, 125]);
    expect([...frameHeader(126)]).toEqual([0x82, 126, 0, 126]);
    expect([...frameHeader(0xffff)]).toEqual([0x82, 126, 0xff, 0xff]);
    expect([...frameHeader(0x1_0000_0001)]).toEqual([0x82, 127, 0, 0, 0, 1, 0, 0, 0, 1]);
  });

  it("puts the opcode in the low four bits and sets FIN only for a final frame", () => {
    expect([...frameHeader(5, Opcode.PING)]).toEqual([0x89, 5]);
    expect([...frameHeader(2, Opcode.CLOSE)]).toEqual([0x88, 2]);
    expect([...frameHeader(3, Opcode.BINARY, false)]).toEqual([0x02, 3]);
    expect([...frameHeader(300, Opcode.CONTINUATION)]).toEqual([0x80, 126, 1, 44]);
  });
});
