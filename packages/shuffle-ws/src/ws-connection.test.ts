import { randomBytes } from "node:crypto";
import { deferred, ErrorCodes, type SluiceError } from "@sluice/core";
import type { TransportConnection } from "@sluice/network/plugin";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import {
  connectedPair,
  dial,
  RecordingHandler,
  Resources,
  serverWithPlainClient,
  settle,
} from "./test-support/ws-fixtures.js";
import type { WsConnection } from "./ws-connection.js";
import { WS_SHUFFLE_PATH, WsTransport } from "./ws-transport.js";

describe("WsConnection", () => {
  const resources = new Resources();
  afterEach(() => resources.closeAll());

  it("sends a [header, payload] write as one binary message whose bytes are their concatenation", async () => {
    // A plain ws client shows what is on the wire: WsConnection's own client reads no messages.
    const { server, peer } = await serverWithPlainClient(resources);
    const messages: Buffer[] = [];
    peer.on("message", (data) => messages.push(data as Buffer));
    const header = randomBytes(47);
    const payload = randomBytes(64 * 1024);
    server.write([header, payload]);
    await expect.poll(() => messages.length).toBe(1);
    expect((messages[0] as Buffer).equals(Buffer.concat([header, payload]))).toBe(true);
  });

  it("delivers a client's [header, payload] write to the server as one message, leaving the caller's buffers as they were", async () => {
    const { client, serverHandler } = await connectedPair(resources);
    const header = randomBytes(47);
    const payload = randomBytes(64 * 1024);
    // The client masks, which must not corrupt its caller's buffers.
    const copy = Buffer.from(payload);
    client.write([header, payload]);
    const back = await serverHandler.whenReceived(header.length + payload.length);
    expect(serverHandler.chunks).toHaveLength(1);
    expect(back.equals(Buffer.concat([header, payload]))).toBe(true);
    expect(payload.equals(copy)).toBe(true);
  });

  it("sends consecutive writes as one message each, and the client delivers their bytes in order", async () => {
    const { server: plainServer, peer } = await serverWithPlainClient(resources);
    const messages: Buffer[] = [];
    peer.on("message", (data) => messages.push(data as Buffer));
    const frames = [randomBytes(10), randomBytes(20_000), randomBytes(1)];
    for (const frame of frames) plainServer.write([frame]);
    await expect.poll(() => messages.length).toBe(3);
    expect(messages.map((message) => message.length)).toEqual([10, 20_000, 1]);

    const { server, clientHandler } = await connectedPair(resources);
    for (const frame of frames) server.write([frame]);
    const received = await clientHandler.whenReceived(10 + 20_000 + 1);
    expect(received.equals(Buffer.concat(frames))).toBe(true);
  });

  it("joins many small frames of one write into one message (more than ws' 16,384 fragments)", async () => {
    const { client, serverHandler } = await connectedPair(resources);
    const frames = Array.from({ length: 20_000 }, (_, i) =>
      Buffer.from([i & 0xff, (i >> 8) & 0xff]),
    );
    client.write(frames);
    const received = await serverHandler.whenReceived(40_000);
    expect(serverHandler.chunks).toHaveLength(1);
    expect(received.equals(Buffer.concat(frames))).toBe(true);
    await settle();
    expect(serverHandler.closes).toEqual([]);
  });

  it("calls onWritten once the message was sent, never synchronously", async () => {
    const { server, clientHandler } = await connectedPair(resources);
    const written = deferred<Error | null | undefined>();
    let returned = false;
    let calledBeforeReturn = false;
    server.write([Buffer.from("header"), randomBytes(8192)], (error) => {
      calledBeforeReturn = !returned;
      written.resolve(error);
    });
    returned = true;
    expect(await written.promise).toBeFalsy();
    expect(calledBeforeReturn).toBe(false);
    await clientHandler.whenReceived(6 + 8192);
  });

  it("reports not writable above the high-water mark while the receiver does not read, and fires onDrain once it drained", async () => {
    const highWaterMark = 256 * 1024;
    const lowWaterMark = 64 * 1024;
    const transport = new WsTransport({ highWaterMark, lowWaterMark });
    const accepted = deferred<WsConnection>();
    const serverHandler = new RecordingHandler();
    const listener = await resources.listen(transport, (connection) => {
      connection.setHandler(serverHandler);
      accepted.resolve(resources.connection(connection as WsConnection));
    });
    // A raw ws client whose socket we can stop reading from (public ws.pause()).
    const consumer = resources.webSocket(
      new WebSocket(`ws://127.0.0.1:${listener.port}${WS_SHUFFLE_PATH}`, {
        perMessageDeflate: false,
      }),
    );
    let messages = 0;
    let bytes = 0;
    const allReceived = deferred<void>();
    let expected = Number.POSITIVE_INFINITY;
    consumer.on("message", (data: Buffer) => {
      messages++;
      bytes += data.length;
      if (messages === expected) allReceived.resolve();
    });
    await new Promise<void>((r) => consumer.once("open", () => r()));
    consumer.pause();
    const producer = await accepted.promise;

    const payload = Buffer.alloc(64 * 1024, 0x5a);
    let writes = 0;
    let writable = true;
    // Kernel buffers absorb a few MiB first; bound the loop so a broken transport fails, not hangs.
    while (writable && writes < 16_384) {
      writable = producer.write([payload]);
      writes++;
    }
    expect(writable).toBe(false);
    expect(producer.isWritable()).toBe(false);
    expect(producer.bufferedAmount).toBeGreaterThanOrEqual(highWaterMark);
    expect(serverHandler.drains).toBe(0);

    const drained = serverHandler.whenDrained();
    expected = writes;
    if (messages === expected) allReceived.resolve();
    consumer.resume();
    await drained;
    expect(serverHandler.drains).toBe(1);
    expect(producer.bufferedAmount).toBeLessThan(lowWaterMark);
    expect(producer.isWritable()).toBe(true);
    await allReceived.promise;
    expect(bytes).toBe(writes * payload.length);
  });

  it("close() closes both sides cleanly: each handler gets onClose(undefined) exactly once", async () => {
    const { server, client, clientHandler, serverHandler } = await connectedPair(resources);
    server.write([Buffer.from("last words")]);
    server.close();
    server.close();
    expect(await clientHandler.whenClosed()).toBeUndefined();
    expect(await serverHandler.whenClosed()).toBeUndefined();
    // Queued data went out before the close frame.
    expect(Buffer.concat(clientHandler.chunks).toString()).toBe("last words");
    client.close();
    client.destroy(new Error("too late"));
    await settle();
    expect(clientHandler.closes).toEqual([undefined]);
    expect(serverHandler.closes).toEqual([undefined]);
  });

  it("destroy(cause) hands the cause to the local side and an abnormal-close error to the peer", async () => {
    const { server, client, clientHandler, serverHandler } = await connectedPair(resources);
    const cause = new Error("decoder failed");
    client.destroy(cause);
    client.destroy(new Error("second"));
    expect(await clientHandler.whenClosed()).toBe(cause);
    const peerCause = (await serverHandler.whenClosed()) as SluiceError;
    expect(peerCause.code).toBe(ErrorCodes.REMOTE_TRANSPORT);
    expect(peerCause.name).toBe("RemoteTransportError");
    expect(peerCause.message).toContain("1006");
    expect(client.isWritable()).toBe(false);
    expect(server.isWritable()).toBe(false);
    await settle();
    expect(clientHandler.closes).toHaveLength(1);
    expect(serverHandler.closes).toHaveLength(1);
  });

  it("destroy() without a cause closes the local side cleanly", async () => {
    const { client, clientHandler, serverHandler } = await connectedPair(resources);
    client.destroy();
    expect(await clientHandler.whenClosed()).toBeUndefined();
    expect(await serverHandler.whenClosed()).toBeInstanceOf(Error);
  });

  it("fails writes after close: returns false and passes an error to onWritten", async () => {
    const { client, clientHandler } = await connectedPair(resources);
    client.close();
    const written = deferred<Error | null | undefined>();
    expect(client.write([Buffer.from("x")], (error) => written.resolve(error))).toBe(false);
    const error = (await written.promise) as SluiceError;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toContain("closing or closed");
    await clientHandler.whenClosed();
  });

  it("keeps messages that arrive before setHandler and delivers them, then the close", async () => {
    const transport = new WsTransport();
    const accepted = deferred<TransportConnection>();
    const listener = // No handler yet: the data below arrives before one is installed.
      await resources.listen(transport, (connection) =>
        accepted.resolve(resources.connection(connection)),
      );
    const client = resources.connection(await dial(transport, listener.port));
    const clientHandler = new RecordingHandler();
    client.setHandler(clientHandler);
    client.write([Buffer.from("early ")]);
    client.write([Buffer.from("bytes")]);
    client.close();
    // The server answered our close frame, so it has read both messages before it.
    expect(await clientHandler.whenClosed()).toBeUndefined();
    const server = await accepted.promise;
    const late = new RecordingHandler();
    server.setHandler(late);
    expect(await late.whenClosed()).toBeUndefined();
    expect(Buffer.concat(late.chunks).toString()).toBe("early bytes");
    expect(late.closes).toHaveLength(1);
  });

  it("fails the connection with a ProtocolError when a text message arrives", async () => {
    const transport = new WsTransport();
    const handler = new RecordingHandler();
    const listener = await resources.listen(transport, (connection) =>
      connection.setHandler(handler),
    );
    const peer = resources.webSocket(
      new WebSocket(`ws://127.0.0.1:${listener.port}${WS_SHUFFLE_PATH}`),
    );
    peer.on("error", () => {});
    await new Promise<void>((r) => peer.once("open", () => r()));
    peer.send("hello");
    const cause = (await handler.whenClosed()) as SluiceError;
    expect(cause.code).toBe(ErrorCodes.PROTOCOL);
    expect(cause.message).toContain("text message");
    expect(handler.chunks).toEqual([]);
  });
});
