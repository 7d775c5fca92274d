import { createConnection } from "node:net";
import { deferred, ErrorCodes, type SluiceError } from "@sluice/core";
import type { TransportConnection } from "@sluice/network/plugin";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import {
  connectedPair,
  dial,
  RecordingHandler,
  Resources,
  unusedPort,
} from "./test-support/ws-fixtures.js";
import type { WsConnection } from "./ws-connection.js";
import { WS_SHUFFLE_PATH, WsTransport } from "./ws-transport.js";

async function expectRejection(promise: Promise<unknown>): Promise<SluiceError> {
  try {
    await promise;
  } catch (error) {
    return error as SluiceError;
  }
  throw new Error("expected a rejection");
}

describe("WsTransport", () => {
  const resources = new Resources();
  afterEach(() => resources.closeAll());

  it("is named ws and rejects a low-water mark that is not below the high-water mark", () => {
    expect(new WsTransport().name).toBe("ws");
    const error = (() => {
      try {
        new WsTransport({ highWaterMark: 1024, lowWaterMark: 1024 });
      } catch (e) {
        return e as SluiceError;
      }
      throw new Error("expected an error");
    })();
    expect(error.code).toBe(ErrorCodes.INVALID_ARGUMENT);
  });

  it("listens on a free port and names the peers' addresses", async () => {
    const { listener, server, client } = await connectedPair(resources);
    expect(listener.port).toBeGreaterThan(0);
    expect(listener.host).toBe("127.0.0.1");
    expect(client.remoteAddress).toBe(`127.0.0.1:${listener.port}`);
    expect(server.remoteAddress).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it("negotiates no extension by default (permessage-deflate off)", async () => {
    const { server, client } = await connectedPair(resources);
    expect((client as WsConnection).extensions).toBe("");
    expect((server as WsConnection).extensions).toBe("");
  });

  it("negotiates permessage-deflate when enabled and still delivers whole messages", async () => {
    const { server, client, clientHandler } = await connectedPair(resources, {
      perMessageDeflate: true,
    });
    expect((client as WsConnection).extensions).toContain("permessage-deflate");
    expect((server as WsConnection).extensions).toContain("permessage-deflate");
    const header = Buffer.from("header");
    const payload = Buffer.alloc(100_000, 7);
    server.write([header, payload]);
    const received = await clientHandler.whenReceived(header.length + payload.length);
    expect(clientHandler.chunks).toHaveLength(1);
    expect(received.equals(Buffer.concat([header, payload]))).toBe(true);
  });

  it("rejects connecting to a port with nothing listening with PartitionConnectionError", async () => {
    const port = await unusedPort();
    const error = await expectRejection(dial(new WsTransport(), port, 1024));
    expect(error.code).toBe(ErrorCodes.PARTITION_CONNECTION);
    expect(error.name).toBe("PartitionConnectionError");
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect((error.cause as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
  });

  it("times out against a server that never answers the upgrade, with a TimeoutError cause, leaving no socket", async () => {
    const peerClosed = deferred<void>();
    const port = await resources.silentServer((socket) => {
      // Read (and drop) the upgrade request so that the client's close is seen.
      socket.resume();
      socket.once("close", () => peerClosed.resolve());
    });
    const connectTimeoutMs = 200;
    const started = performance.now();
    const error = await expectRejection(
      new WsTransport().connect({ host: "127.0.0.1", port, connectTimeoutMs, maxFrameSize: 1024 }),
    );
    const elapsed = performance.now() - started;
    expect(error.code).toBe(ErrorCodes.PARTITION_CONNECTION);
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.message).toContain("timed out");
    const cause = error.cause as SluiceError;
    expect(cause.code).toBe(ErrorCodes.TIMEOUT);
    expect(cause.name).toBe("TimeoutError");
    expect(elapsed).toBeLessThan(connectTimeoutMs + 1_000);
    // The client's socket was destroyed: the silent server sees it close.
    await peerClosed.promise;
  });

  it("rejects a connection that is refused during the handshake (wrong server) with PartitionConnectionError", async () => {
    const port = await resources.silentServer((socket) => {
      socket.end("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    const error = await expectRejection(dial(new WsTransport(), port, 1024));
    expect(error.code).toBe(ErrorCodes.PARTITION_CONNECTION);
    expect(error.message).toContain("404");
  });

  it("refuses upgrades on any path but /sluice with 400", async () => {
    let accepted = 0;
    const listener = await resources.listen(
      new WsTransport(),
      (connection) => {
        accepted++;
        resources.connection(connection).destroy();
      },
      1024,
    );
    const ws = resources.webSocket(new WebSocket(`ws://127.0.0.1:${listener.port}/other`));
    ws.on("error", () => {});
    const status = await new Promise<number | undefined>((resolve) => {
      ws.once("unexpected-response", (_request, response) => {
        resolve(response.statusCode);
        ws.terminate();
      });
      ws.once("open", () => resolve(undefined));
    });
    expect(status).toBe(400);
    expect(accepted).toBe(0);
    expect(WS_SHUFFLE_PATH).toBe("/sluice");
  });

  it("closes a connection whose message exceeds maxPayload (twice maxFrameSize) with a clear cause on both sides", async () => {
    const { client, serverHandler, clientHandler } = await connectedPair(resources, {}, 1024);
    // 2 × 1024 bytes are fine.
    client.write([Buffer.alloc(1024, 1), Buffer.alloc(1024, 2)]);
    await serverHandler.whenReceived(2048);
    client.write([Buffer.alloc(2049, 3)]);
    const serverCause = (await serverHandler.whenClosed()) as SluiceError;
    expect(serverCause.code).toBe(ErrorCodes.PROTOCOL);
    expect(serverCause.message).toContain("Max payload size exceeded");
    expect(serverCause.message).toContain("1009 (message too big)");
    const clientCause = (await clientHandler.whenClosed()) as SluiceError;
    expect(clientCause.code).toBe(ErrorCodes.REMOTE_TRANSPORT);
    expect(clientCause.message).toContain("1009 (message too big)");
    expect(serverHandler.receivedBytes).toBe(2048);
  });

  it("server close() ends accepted connections and sockets that never finished the upgrade", async () => {
    const { listener, clientHandler, serverHandler } = await connectedPair(resources);
    // A socket that connected but never sent its upgrade request.
    const stuck = resources.socket(createConnection({ host: "127.0.0.1", port: listener.port }));
    // Flowing, so the server's close is read: a socket that is never read may never see the end
    // of its stream, and then never emits 'close'.
    stuck.resume();
    await new Promise<void>((r) => stuck.once("connect", () => r()));
    const stuckClosed = new Promise<void>((r) => stuck.once("close", () => r()));
    await listener.close();
    await listener.close();
    await stuckClosed;
    // Locally ended without a cause; the peer sees the connection die.
    expect(await serverHandler.whenClosed()).toBeUndefined();
    const clientCause = (await clientHandler.whenClosed()) as SluiceError;
    expect(clientCause.code).toBe(ErrorCodes.REMOTE_TRANSPORT);
    const error = await expectRejection(dial(new WsTransport(), listener.port, 1024));
    expect(error.code).toBe(ErrorCodes.PARTITION_CONNECTION);
  });

  it("rejects listen() on a port already in use", async () => {
    const { listener } = await connectedPair(resources);
    const error = await expectRejection(
      new WsTransport().listen({
        host: "127.0.0.1",
        port: listener.port,
        maxFrameSize: 1024,
        onConnection: (connection: TransportConnection) => connection.destroy(),
      }),
    );
    expect((error as unknown as NodeJS.ErrnoException).code).toBe("EADDRINUSE");
  });

  it("serves several clients on one server independently", async () => {
    const transport = new WsTransport();
    const handlers: RecordingHandler[] = [];
    const listener = await resources.listen(transport, (connection) => {
      const handler = new RecordingHandler();
      handlers.push(handler);
      resources.connection(connection).setHandler(handler);
    });
    const clients = await Promise.all(
      [0, 1, 2].map((i) =>
        dial(transport, listener.port).then((client) => {
          resources.connection(client).setHandler(new RecordingHandler());
          client.write([Buffer.from(`client ${i}`)]);
          return client;
        }),
      ),
    );
    expect(clients).toHaveLength(3);
    await Promise.all(handlers.map((handler) => handler.whenReceived(8)));
    expect(handlers.map((h) => Buffer.concat(h.chunks).toString()).sort()).toEqual([
      "client 0",
      "client 1",
      "client 2",
    ]);
  });
});
