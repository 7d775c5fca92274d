import { createConnection, type Socket } from "node:net";
import { ErrorCodes } from "@sluice/core";
import { blockEventLoop } from "@sluice/core/testing";
import { errorFromErrorResponse, type NettyMessage } from "@sluice/network/plugin";
import {
  decodeAnswer,
  describeHostilePeerLimitsSuite,
  describeSmallestBufferSettingsSuite,
  InProcessCluster,
  networkEnvironmentOf,
  type RawPeer,
} from "@sluice/shuffle-tck/transport";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { WS_PLUGIN } from "./test-support/plugin.js";
import { WS_SHUFFLE_PATH } from "./ws-transport.js";

/** A raw WebSocket peer: every `send` is one binary message of exactly the given bytes. */
function connectPeer(port: number): Promise<RawPeer & { readonly ws: WebSocket }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${WS_SHUFFLE_PATH}`);
    ws.binaryType = "nodebuffer";
    const received: Buffer[] = [];
    let closed = false;
    const closedPromise = new Promise<void>((done) =>
      ws.once("close", () => {
        closed = true;
        done();
      }),
    );
    ws.on("message", (data: Buffer) => received.push(data));
    ws.once("open", () => {
      // The server resets hostile connections; the test looks at what arrived and at `closed`.
      ws.off("error", reject);
      ws.on("error", () => {});
      resolve({
        ws,
        received,
        closed: closedPromise,
        // Closing counts as closed: `ws` answers a send after the server's close frame or reset
        // on the next tick, before its 'close' event, so a peer's send loop would never give the
        // event loop a turn and the 'close' event would never come.
        isClosed: () => closed || ws.readyState !== WebSocket.OPEN,
        send: (bytes) =>
          new Promise((done) => {
            if (closed || ws.readyState !== WebSocket.OPEN) {
              done();
              return;
            }
            ws.send(bytes, { binary: true }, () => done());
          }),
        pauseReading: () => ws.pause(),
        resumeReading: () => ws.resume(),
        destroy: () => ws.terminate(),
      });
    });
    ws.once("error", reject);
  });
}

/** A TCP socket that sends half a WebSocket upgrade request and nothing more. */
function connectHalfUpgrade(port: number): Promise<RawPeer> {
  return new Promise((resolve, reject) => {
    const socket: Socket = createConnection({ host: "127.0.0.1", port }, () => {
      socket.off("error", reject);
      socket.on("error", () => {});
      socket.write(`GET ${WS_SHUFFLE_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n`);
      let closed = false;
      const received: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => received.push(chunk));
      const closedPromise = new Promise<void>((done) =>
        socket.once("close", () => {
          closed = true;
          done();
        }),
      );
      resolve({
        received,
        closed: closedPromise,
        isClosed: () => closed,
        send: (bytes) => new Promise((done) => socket.write(bytes, () => done())),
        pauseReading: () => socket.pause(),
        resumeReading: () => socket.resume(),
        destroy: () => socket.destroy(),
      });
    });
    socket.once("error", reject);
  });
}

describeHostilePeerLimitsSuite("WebSocket", WS_PLUGIN, {
  connect: connectPeer,
  connectWithoutHandshake: connectHalfUpgrade,
});

describeSmallestBufferSettingsSuite("WebSocket", WS_PLUGIN);

describe("the WebSocket data server and text messages", () => {
  let cluster: InProcessCluster | undefined;

  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it("answers a text message with the documented fatal PROTOCOL ErrorResponse, then closes", async () => {
    cluster = new InProcessCluster(WS_PLUGIN, { "taskmanager.memory.network.min": "4mb" });
    const executor = await cluster.startExecutor();
    const env = networkEnvironmentOf(executor);
    const peer = await connectPeer(executor.location.dataPort);
    peer.ws.send("hello, is this HTTP?");
    await peer.closed;
    const messages = decodeAnswer(peer.received);
    const fatal = messages.find((m) => m.id === 1 && m.receiverId === undefined);
    expect(fatal).toBeDefined();
    const error = errorFromErrorResponse(fatal as Extract<NettyMessage, { id: 1 }>);
    expect(error.code).toBe(ErrorCodes.PROTOCOL);
    expect(error.message).toContain("text message");
    await expect.poll(() => env.getNumberOfServerConnections()).toBe(0);
  });
});

describe("the WebSocket data server's upgrade deadline", () => {
  let cluster: InProcessCluster | undefined;
  const peers: RawPeer[] = [];

  afterEach(async () => {
    for (const peer of peers.splice(0)) peer.destroy();
    await cluster?.close();
    cluster = undefined;
  });

  it("keeps a connection whose upgrade request was completed while the event loop was blocked past taskmanager.network.websocket.handshake-timeout", async () => {
    const deadlineMs = 300;
    cluster = new InProcessCluster(WS_PLUGIN, {
      "taskmanager.memory.network.min": "4mb",
      "taskmanager.network.idle-connection-timeout": "1min",
      "taskmanager.network.websocket.handshake-timeout": `${deadlineMs}ms`,
    });
    const executor = await cluster.startExecutor();
    const peer = await connectHalfUpgrade(executor.location.dataPort);
    peers.push(peer);
    // The server accepted the socket and read the first half: its upgrade deadline runs.
    await new Promise((resolve) => setTimeout(resolve, deadlineMs / 3));
    // The rest reaches the server's socket at once, but the event loop both share is blocked
    // past the deadline: when it turns again, the timer is due before the socket is read.
    void peer.send(
      Buffer.from(
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
      ),
    );
    blockEventLoop(3 * deadlineMs);
    await expect.poll(() => networkEnvironmentOf(executor).getNumberOfServerConnections()).toBe(1);
    expect(Buffer.concat(peer.received).toString("latin1")).toMatch(/^HTTP\/1\.1 101 /);
    expect(peer.isClosed()).toBe(false);
  });
});
