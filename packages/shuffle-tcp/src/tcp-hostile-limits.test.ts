import { createConnection, type Socket } from "node:net";
import { type NetworkShuffleEnvironment, readTlsSettings } from "@sluice/network";
import {
  describeHostilePeerLimitsSuite,
  describeSmallestBufferSettingsSuite,
  type RawPeer,
} from "@sluice/network/hostile";
import { createTestPki, environmentContext, type TestPki } from "@sluice/network/testing";
import { readableConfigOf } from "@sluice/runtime-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TcpShuffleServiceFactory } from "./tcp-shuffle-service-factory.js";

/** A raw TCP peer: sends exactly the bytes it is given. */
function rawPeer(socket: Socket): RawPeer {
  const received: Buffer[] = [];
  let closed = false;
  const closedPromise = new Promise<void>((resolve) =>
    socket.once("close", () => {
      closed = true;
      resolve();
    }),
  );
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  // The server resets hostile connections; the test looks at what arrived and at `closed`.
  socket.on("error", () => {});
  return {
    received,
    closed: closedPromise,
    isClosed: () => closed,
    send: (bytes) =>
      new Promise((resolve) => {
        if (closed || socket.write(bytes)) {
          resolve();
          return;
        }
        const done = () => {
          socket.off("drain", done);
          socket.off("close", done);
          resolve();
        };
        socket.on("drain", done);
        socket.on("close", done);
      }),
    pauseReading: () => socket.pause(),
    resumeReading: () => socket.resume(),
    destroy: () => socket.destroy(),
  };
}

function connectRaw(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: "127.0.0.1", port }, () => {
      socket.off("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

describeHostilePeerLimitsSuite(
  "TCP",
  (context) => new TcpShuffleServiceFactory().createShuffleEnvironment(context),
  { connect: async (port) => rawPeer(await connectRaw(port)) },
);

describeSmallestBufferSettingsSuite("TCP", (context) =>
  new TcpShuffleServiceFactory().createShuffleEnvironment(context),
);

describe("the TCP data server with TLS", () => {
  let pki: TestPki;
  const envs: NetworkShuffleEnvironment[] = [];

  beforeAll(() => {
    pki = createTestPki("handshake");
  });

  afterAll(() => pki?.remove());

  afterEach(async () => {
    for (const env of envs.splice(0)) await env.close();
  });

  it("drops a client that never completes the TLS handshake within security.ssl.internal.handshake-timeout", async () => {
    const server = pki.issue("server");
    const env = new TcpShuffleServiceFactory().createShuffleEnvironment(
      environmentContext({
        "taskmanager.memory.network.min": "4mb",
        "security.ssl.internal.enabled": true,
        "security.ssl.internal.key": server.key,
        "security.ssl.internal.cert": server.cert,
        "security.ssl.internal.ca": pki.caCert,
        "security.ssl.internal.handshake-timeout": "300ms",
      }),
    );
    envs.push(env);
    await env.start();
    // Connects over TCP and never sends a ClientHello.
    const peer = rawPeer(await connectRaw(env.getDataPort()));
    await peer.closed;
    expect(Buffer.concat(peer.received).length).toBe(0);
    expect(env.getNumberOfServerConnections()).toBe(0);
  });

  it("uses a 10 s TLS handshake timeout by default instead of Node's 120 s", () => {
    const server = pki.issue("defaults");
    const settings = readTlsSettings(
      readableConfigOf({
        "security.ssl.internal.enabled": true,
        "security.ssl.internal.key": server.key,
        "security.ssl.internal.cert": server.cert,
        "security.ssl.internal.ca": pki.caCert,
      }),
    );
    expect(settings?.handshakeTimeoutMs).toBe(10_000);
  });
});
