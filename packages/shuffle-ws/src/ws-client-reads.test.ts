import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { ErrorCodes, type SluiceError } from "@sluice/core";
import { createTestPki } from "@sluice/core/test-certificates";
import { READ_BUFFER_BYTES, type TlsSettings } from "@sluice/network/plugin";
import { afterEach, describe, expect, it } from "vitest";
import {
  clientWithPlainServer,
  connectedPair,
  RecordingHandler,
  Resources,
} from "./test-support/ws-fixtures.js";
import { frameHeader } from "./ws-frame-header.js";
import { WsTransport } from "./ws-transport.js";

/**
 * The client side of the WebSocket transport reads into one reused buffer and takes binary
 * payloads out of it itself (WsFrameReader); ws still runs the rest of the protocol. These tests
 * put a plain `ws` server on the other side to send what the shuffle's own server never sends.
 */
describe("a WsTransport client reading into a reused buffer", () => {
  const resources = new Resources();
  afterEach(() => resources.closeAll());

  it("delivers every byte in order across many reads of the one buffer, messages fragmented or not", async () => {
    const { clientHandler, peer } = await clientWithPlainServer(resources);
    // Several times the read buffer, so later reads overwrite what earlier ones delivered.
    const messages = [randomBytes(3 * READ_BUFFER_BYTES + 17), randomBytes(1), randomBytes(40_000)];
    peer.send(messages[0] as Buffer);
    peer.send(messages[1] as Buffer);
    const third = messages[2] as Buffer;
    peer.send(third.subarray(0, 10_000), { fin: false });
    peer.ping(Buffer.from("between fragments"));
    peer.send(third.subarray(10_000), { fin: true });
    const total = messages.reduce((n, m) => n + m.length, 0);
    const received = await clientHandler.whenReceived(total);
    expect(received.equals(Buffer.concat(messages))).toBe(true);
  });

  it("hands a message that spans several reads over read by read, without joining it", async () => {
    const { clientHandler, peer } = await clientWithPlainServer(resources);
    const message = randomBytes(4 * READ_BUFFER_BYTES);
    peer.send(message);
    expect((await clientHandler.whenReceived(message.length)).equals(message)).toBe(true);
    // ws would deliver one joined Buffer; no read holds more than the read buffer.
    expect(clientHandler.chunks.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...clientHandler.chunks.map((c) => c.length))).toBeLessThanOrEqual(
      READ_BUFFER_BYTES,
    );
  });

  it("over wss too: hands a message over as the TLS socket delivers it, not joined", async () => {
    const pki = createTestPki("ws-client-reads");
    try {
      const issued = pki.issue("worker");
      const tls: TlsSettings = {
        key: readFileSync(issued.key),
        cert: readFileSync(issued.cert),
        ca: readFileSync(pki.caCert),
        fingerprints: [],
        handshakeTimeoutMs: undefined,
        minVersion: "TLSv1.3",
      };
      const { server, clientHandler } = await connectedPair(resources, { tls });
      const header = randomBytes(40);
      const payload = randomBytes(2 * READ_BUFFER_BYTES);
      server.write([header, payload]);
      const received = await clientHandler.whenReceived(header.length + payload.length);
      expect(received.equals(Buffer.concat([header, payload]))).toBe(true);
      // ws would deliver one joined Buffer; TLS delivers at most 16 KiB per read.
      expect(clientHandler.chunks.length).toBeGreaterThanOrEqual(8);
      server.write([Buffer.from("and more")]);
      expect((await clientHandler.whenReceived(received.length + 8)).subarray(-8).toString()).toBe(
        "and more",
      );
    } finally {
      pki.remove();
    }
  });

  it("answers a ping with a pong carrying its payload, through ws", async () => {
    const { clientHandler, peer } = await clientWithPlainServer(resources);
    const pong = new Promise<Buffer>((resolve) => peer.once("pong", resolve));
    peer.ping(Buffer.from("ping 1"));
    expect((await pong).toString()).toBe("ping 1");
    peer.send(Buffer.from("after"));
    expect((await clientHandler.whenReceived(5)).toString()).toBe("after");
  });

  it("closes cleanly when the server closes with 1000, and names code and reason for 1011", async () => {
    const clean = await clientWithPlainServer(resources);
    clean.peer.close(1000);
    expect(await clean.clientHandler.whenClosed()).toBeUndefined();

    const failed = await clientWithPlainServer(resources);
    failed.peer.close(1011, "boom");
    const cause = (await failed.clientHandler.whenClosed()) as SluiceError;
    expect(cause.code).toBe(ErrorCodes.REMOTE_TRANSPORT);
    expect(cause.message).toContain('1011 (internal error), reason "boom"');
  });

  it("fails with a ProtocolError on a text message, and delivers nothing of it", async () => {
    const { clientHandler, peer } = await clientWithPlainServer(resources);
    peer.send(Buffer.from("binary first"));
    peer.send("a text message");
    const cause = (await clientHandler.whenClosed()) as SluiceError;
    expect(cause.code).toBe(ErrorCodes.PROTOCOL);
    expect(cause.message).toContain("text message");
    expect(Buffer.concat(clientHandler.chunks).toString()).toBe("binary first");
  });

  it("fails with a ProtocolError naming 1009 on a message over twice maxFrameSize", async () => {
    const { clientHandler, peer } = await clientWithPlainServer(resources, 1000);
    peer.send(randomBytes(2000));
    peer.send(randomBytes(2001));
    const cause = (await clientHandler.whenClosed()) as SluiceError;
    expect(cause.code).toBe(ErrorCodes.PROTOCOL);
    expect(cause.message).toContain("1009 (message too big)");
    expect(clientHandler.receivedBytes).toBe(2000);
  });

  it("delivers nothing while paused and everything after resume", async () => {
    const { client, clientHandler, peer } = await clientWithPlainServer(resources);
    client.pause();
    const message = randomBytes(8 * READ_BUFFER_BYTES);
    const sent = new Promise<void>((resolve) => peer.send(message, () => resolve()));
    // Far more than a socket buffer holds: the server's writes back up while the client waits.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(clientHandler.receivedBytes).toBe(0);
    client.resume();
    await sent;
    expect((await clientHandler.whenReceived(message.length)).equals(message)).toBe(true);
  });

  it("leaves the reads to ws when part of a frame came in the same read as the handshake response", async () => {
    // A hand-written server: the 101 response and the first part of a binary frame in one
    // write, the rest later. ws holds that part; a reader taking over from there would read the
    // rest, which starts like a binary frame's header, as a frame of its own.
    const half = 20;
    const payload = Buffer.concat([
      Buffer.from("sent with the answer"),
      Buffer.from([0x82, 3]),
      Buffer.from("abc, sent after it"),
    ]);
    const next = Buffer.from(", then one more frame");
    const sockets: Socket[] = [];
    const server = createServer((socket) => {
      sockets.push(resources.socket(socket));
      socket.once("data", (request) => {
        const key = /sec-websocket-key: *(\S+)/i.exec(request.toString())?.[1] ?? "";
        const accept = createHash("sha1")
          .update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
          .digest("base64");
        socket.write(
          Buffer.concat([
            Buffer.from(
              "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
                `Sec-WebSocket-Accept: ${accept}\r\n\r\n`,
            ),
            frameHeader(payload.length),
            payload.subarray(0, half),
          ]),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const client = resources.connection(
        await new WsTransport().connect({
          host: "127.0.0.1",
          port: (server.address() as { port: number }).port,
          connectTimeoutMs: 5_000,
          maxFrameSize: 1 << 20,
        }),
      );
      const handler = new RecordingHandler();
      client.setHandler(handler);
      (sockets[0] as Socket).write(
        Buffer.concat([payload.subarray(half), frameHeader(next.length), next]),
      );
      const received = await handler.whenReceived(payload.length + next.length);
      expect(received.equals(Buffer.concat([payload, next]))).toBe(true);
      expect(handler.closes).toEqual([]);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
