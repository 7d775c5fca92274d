import { ErrorCodes, isSluiceError } from "@sluice/core";
import { createTestPki, type TestPki } from "@sluice/core/test-certificates";
import { readTlsSettings, type TlsSettings } from "@sluice/network/plugin";
import type { TaskExecutor } from "@sluice/runtime";
import { readableConfigOf } from "@sluice/runtime-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closedAfterBlockedTlsHandshake } from "./blocked-tls-handshake.js";
import { InProcessCluster, networkEnvironmentOf, type RawConfig } from "./in-process-cluster.js";

/** A short `security.ssl.internal.handshake-timeout`, for the cases about that deadline. */
const SHORT_HANDSHAKE_TIMEOUT_MS = 300;

const BASE: RawConfig = {
  "taskmanager.memory.network.min": "4mb",
  "taskmanager.memory.network.max": "4mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.netty.client.connect-timeout": "5s",
};

/**
 * The TLS behaviour every network-shuffle transport must have with `security.ssl.internal.*`:
 * mutual authentication against the configured CA, clean rejection of untrusted, plaintext and
 * unpinned peers, a handshake deadline that a stall of the event loop does not trip, and fail-fast
 * configuration errors. Certificates are generated at test time
 * with the openssl CLI.
 *
 * @param factory - the plugin's `shuffle-service-factory.class` value.
 */
export function describeNetworkTlsSuite(name: string, factory: string): void {
  describe(`mutual TLS on the ${name} data port`, () => {
    let pki: TestPki;
    let rogue: TestPki;
    let tlsProducer: RawConfig;
    let tlsConsumer: RawConfig;
    let producerFingerprint: string;
    let cluster: InProcessCluster;

    beforeAll(() => {
      pki = createTestPki("trusted");
      rogue = createTestPki("rogue");
      const producer = pki.issue("producer");
      const consumer = pki.issue("consumer");
      producerFingerprint = producer.fingerprint256;
      const tls = (id: { key: string; cert: string }): RawConfig => ({
        "security.ssl.internal.enabled": true,
        "security.ssl.internal.key": id.key,
        "security.ssl.internal.cert": id.cert,
        "security.ssl.internal.ca": pki.caCert,
      });
      tlsProducer = tls(producer);
      tlsConsumer = tls(consumer);
    });

    afterAll(() => {
      pki?.remove();
      rogue?.remove();
    });

    afterEach(async () => {
      await cluster?.close();
    });

    async function start(config: RawConfig): Promise<TaskExecutor> {
      cluster ??= new InProcessCluster(factory, BASE);
      return cluster.startExecutor(config);
    }

    /** Runs one small exchange; returns the first consumer's failure, if any. */
    async function exchange(producer: TaskExecutor, consumer: TaskExecutor) {
      const { execution, consumers } = await cluster.deploy(
        { producers: 1, consumers: 2, plan: { records: 4_000, padding: 16 } },
        producer,
        consumer,
      );
      const result = await execution.terminated;
      const failure = consumers.map((c) => c.failureCause).find((e) => e !== undefined);
      return { status: result.status, error: failure ?? result.error };
    }

    it("moves data when both sides present certificates of the trusted CA", async () => {
      const producer = await start(tlsProducer);
      const consumer = await start(tlsConsumer);
      const result = await exchange(producer, consumer);
      expect(result.error).toBeUndefined();
      expect(result.status).toBe("FINISHED");
    });

    it("rejects a client whose certificate another CA signed, and keeps serving trusted clients", async () => {
      const producer = await start(tlsProducer);
      const stranger = rogue.issue("stranger");
      const untrusted = await start({
        ...tlsConsumer,
        "security.ssl.internal.key": stranger.key,
        "security.ssl.internal.cert": stranger.cert,
      });
      const rejected = await exchange(producer, untrusted);
      expect(isSluiceError(rejected.error)).toBe(true);
      expect([ErrorCodes.PARTITION_CONNECTION, ErrorCodes.REMOTE_TRANSPORT]).toContain(
        (rejected.error as Error & { code?: string }).code,
      );
      const trusted = await start(tlsConsumer);
      expect((await exchange(producer, trusted)).error).toBeUndefined();
    });

    it("rejects a plaintext client cleanly", async () => {
      const producer = await start(tlsProducer);
      const plaintext = await start({});
      const rejected = await exchange(producer, plaintext);
      expect(isSluiceError(rejected.error)).toBe(true);
      expect((rejected.error as Error).message).toContain("127.0.0.1");
      expect(networkEnvironmentOf(producer).getNumberOfServerConnections()).toBe(0);
    });

    it("rejects a peer whose certificate is not the pinned fingerprint", async () => {
      const producer = await start(tlsProducer);
      const pinnedWrong = await start({
        ...tlsConsumer,
        "security.ssl.internal.cert.fingerprint": "AA".repeat(32),
      });
      const rejected = await exchange(producer, pinnedWrong);
      expect((rejected.error as Error & { code?: string }).code).toBe(
        ErrorCodes.PARTITION_CONNECTION,
      );
      expect((rejected.error as Error).message).toContain("fingerprint");
      const pinnedRight = await start({
        ...tlsConsumer,
        "security.ssl.internal.cert.fingerprint": producerFingerprint,
      });
      expect((await exchange(producer, pinnedRight)).error).toBeUndefined();
    });

    it("keeps a client whose TLS handshake was completed while the event loop was blocked past security.ssl.internal.handshake-timeout", async () => {
      const producer = await start({
        ...tlsProducer,
        "security.ssl.internal.handshake-timeout": `${SHORT_HANDSHAKE_TIMEOUT_MS}ms`,
        "taskmanager.network.idle-connection-timeout": "1min",
      });
      const settings = readTlsSettings(readableConfigOf(tlsConsumer)) as TlsSettings;
      expect(
        await closedAfterBlockedTlsHandshake(
          producer.location.dataPort,
          settings,
          SHORT_HANDSHAKE_TIMEOUT_MS,
        ),
      ).toBe(false);
    });

    it("fails fast with a config error naming the key when a PEM file is missing", async () => {
      await expect(
        start({ ...tlsConsumer, "security.ssl.internal.key": "/nonexistent/key.pem" }),
      ).rejects.toThrowError(/security\.ssl\.internal\.key.*nonexistent/);
    });
  });
}
