import { ErrorCodes, isSluiceError } from "@sluice/core";
import type { ShuffleEnvironmentContext } from "@sluice/runtime-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { NetworkShuffleEnvironment } from "../environment/network-shuffle-environment.js";
import { createTestPki, type TestPki } from "./certificates.js";
import {
  deployAllToAll,
  environmentContext,
  type RawConfig,
  runAllToAll,
} from "./shuffle-fixture.js";

/** Creates the plugin's environment for a context, e.g. via its factory's createShuffleEnvironment. */
export type EnvironmentFactory = (context: ShuffleEnvironmentContext) => NetworkShuffleEnvironment;

const base: RawConfig = {
  "taskmanager.memory.network.min": "4mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.netty.client.connect-timeout": "5s",
};

/**
 * The TLS behaviour every network-shuffle transport must have with `security.ssl.internal.*`:
 * mutual authentication against the configured CA, clean rejection of untrusted, plaintext and
 * unpinned peers, and fail-fast configuration errors. Certificates are generated at test time
 * with the openssl CLI.
 */
export function describeNetworkTlsSuite(name: string, createEnvironment: EnvironmentFactory): void {
  describe(`mutual TLS on the ${name} data port`, () => {
    let pki: TestPki;
    let rogue: TestPki;
    let tlsProducer: RawConfig;
    let tlsConsumer: RawConfig;
    let producerFingerprint: string;
    const envs: NetworkShuffleEnvironment[] = [];

    beforeAll(() => {
      pki = createTestPki("trusted");
      rogue = createTestPki("rogue");
      const producer = pki.issue("producer");
      const consumer = pki.issue("consumer");
      producerFingerprint = producer.fingerprint256;
      const tls = (id: { key: string; cert: string }): RawConfig => ({
        ...base,
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
      for (const env of envs.splice(0)) await env.close();
    });

    async function start(config: RawConfig): Promise<NetworkShuffleEnvironment> {
      const env = createEnvironment(environmentContext(config));
      envs.push(env);
      await env.start();
      return env;
    }

    /** Runs one small exchange and returns the consumer's error, if any. */
    async function exchange(
      producer: NetworkShuffleEnvironment,
      consumer: NetworkShuffleEnvironment,
      config: RawConfig,
    ) {
      const job = await deployAllToAll(producer, consumer, 1, 2, config);
      try {
        const checkers = await runAllToAll(job, 2_000, 16);
        return { error: undefined, counts: checkers.map((c) => c.nextSeq[0]) };
      } catch (error) {
        return { error, counts: [] };
      } finally {
        for (const gate of job.gates) await gate.close();
        for (const writer of job.writers) writer.release();
      }
    }

    it("moves data when both sides present certificates of the trusted CA", async () => {
      const producer = await start(tlsProducer);
      const consumer = await start(tlsConsumer);
      const result = await exchange(producer, consumer, tlsConsumer);
      expect(result.error).toBeUndefined();
      expect(result.counts).toEqual([2_000, 2_000]);
    });

    it("rejects a client whose certificate another CA signed, and keeps serving trusted clients", async () => {
      const producer = await start(tlsProducer);
      const stranger = rogue.issue("stranger");
      const untrusted = await start({
        ...tlsConsumer,
        "security.ssl.internal.key": stranger.key,
        "security.ssl.internal.cert": stranger.cert,
      });
      const rejected = await exchange(producer, untrusted, tlsConsumer);
      expect(isSluiceError(rejected.error)).toBe(true);
      expect([ErrorCodes.PARTITION_CONNECTION, ErrorCodes.REMOTE_TRANSPORT]).toContain(
        (rejected.error as { code: string }).code,
      );
      const trusted = await start(tlsConsumer);
      const accepted = await exchange(producer, trusted, tlsConsumer);
      expect(accepted.error).toBeUndefined();
    });

    it("rejects a plaintext client cleanly", async () => {
      const producer = await start(tlsProducer);
      const plaintext = await start(base);
      const rejected = await exchange(producer, plaintext, base);
      expect(isSluiceError(rejected.error)).toBe(true);
      expect((rejected.error as Error).message).toContain("127.0.0.1");
      expect(producer.getNumberOfServerConnections()).toBe(0);
    });

    it("rejects a peer whose certificate is not the pinned fingerprint", async () => {
      const producer = await start(tlsProducer);
      const pinnedWrong = await start({
        ...tlsConsumer,
        "security.ssl.internal.cert.fingerprint": "AA".repeat(32),
      });
      const rejected = await exchange(producer, pinnedWrong, tlsConsumer);
      expect((rejected.error as { code?: string }).code).toBe(ErrorCodes.PARTITION_CONNECTION);
      expect((rejected.error as Error).message).toContain("fingerprint");
      const pinnedRight = await start({
        ...tlsConsumer,
        "security.ssl.internal.cert.fingerprint": producerFingerprint,
      });
      expect((await exchange(producer, pinnedRight, tlsConsumer)).error).toBeUndefined();
    });

    it("fails fast with a config error naming the key when a PEM file is missing", () => {
      expect(() =>
        createEnvironment(
          environmentContext({
            ...tlsConsumer,
            "security.ssl.internal.key": "/nonexistent/key.pem",
          }),
        ),
      ).toThrowError(/security\.ssl\.internal\.key.*nonexistent/);
    });
  });
}
