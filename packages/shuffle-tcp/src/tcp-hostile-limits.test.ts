import { createConnection, type Socket } from "node:net";
import { readTlsSettings } from "@sluice/network";
import { readableConfigOf } from "@sluice/runtime-api";
import {
  createTestPki,
  describeHostilePeerLimitsSuite,
  describeSmallestBufferSettingsSuite,
  InProcessCluster,
  networkEnvironmentOf,
  type RawPeer,
  type TestPki,
} from "@sluice/shuffle-tck/transport";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TCP_PLUGIN } from "./test-support/plugin.js";

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

describeHostilePeerLimitsSuite("TCP", TCP_PLUGIN, {
  connect: async (port) => rawPeer(await connectRaw(port)),
});

describeSmallestBufferSettingsSuite("TCP", TCP_PLUGIN);

describe("the TCP data server with TLS", () => {
  let pki: TestPki;
  let cluster: InProcessCluster | undefined;

  beforeAll(() => {
    pki = createTestPki("handshake");
  });

  afterAll(() => pki?.remove());

  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it("drops a client that never completes the TLS handshake within security.ssl.internal.handshake-timeout", async () => {
    const server = pki.issue("server");
    cluster = new InProcessCluster(TCP_PLUGIN, {
      "taskmanager.memory.network.min": "4mb",
      "security.ssl.internal.enabled": true,
      "security.ssl.internal.key": server.key,
      "security.ssl.internal.cert": server.cert,
      "security.ssl.internal.ca": pki.caCert,
      "security.ssl.internal.handshake-timeout": "300ms",
    });
    const executor = await cluster.startExecutor();
    // Connects over TCP and never sends a ClientHello.
    const peer = rawPeer(await connectRaw(executor.location.dataPort));
    await peer.closed;
    expect(Buffer.concat(peer.received).length).toBe(0);
    expect(networkEnvironmentOf(executor).getNumberOfServerConnections()).toBe(0);
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
