import { createTestPki, type TestPki } from "@sluice/core/test-certificates";
import { readTlsSettings } from "@sluice/network/plugin";
import { readableConfigOf } from "@sluice/runtime-api";
import {
  connectRawTcp,
  describeHostilePeerLimitsSuite,
  describeSmallestBufferSettingsSuite,
  InProcessCluster,
  networkEnvironmentOf,
  rawTcpPeer,
} from "@sluice/shuffle-tck/transport";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TCP_PLUGIN } from "./test-support/plugin.js";

describeHostilePeerLimitsSuite("TCP", TCP_PLUGIN, {
  connect: async (port) => rawTcpPeer(await connectRawTcp(port)),
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
    const peer = rawTcpPeer(await connectRawTcp(executor.location.dataPort));
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
