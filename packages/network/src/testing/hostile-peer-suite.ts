import { ErrorCodes } from "@sluice/core";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import type { NetworkShuffleEnvironment } from "../environment/network-shuffle-environment.js";
import { errorFromErrorResponse } from "../protocol/error-response.js";
import type { ErrorResponse, NettyMessage } from "../protocol/netty-message.js";
import { NettyMessageDecoder } from "../protocol/netty-message-decoder.js";
import {
  deployAllToAll,
  environmentContext,
  type RawConfig,
  runAllToAll,
} from "./shuffle-fixture.js";
import type { EnvironmentFactory } from "./tls-suite.js";

/** What the suite needs from a transport's test: raw access to its wire. */
export interface HostilePeerTransport {
  /** Sends `bytes` to a data server as one unit and resolves with the raw bytes it answered once it closed. */
  sendRaw(port: number, bytes: Uint8Array): Promise<{ answer: Buffer[]; closed: boolean }>;
  /** Starts a fake data server on 127.0.0.1 that answers every connection with `garbage`. */
  startGarbageServer(garbage: Buffer): Promise<{ port: number; close(): Promise<void> }>;
}

const config: RawConfig = {
  "taskmanager.memory.network.min": "8mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.max-frame-size": "1mb",
};

/** Decodes what a data server answered, keeping what decoded before any error. */
function decodeAnswer(answer: readonly Buffer[]): NettyMessage[] {
  const messages: NettyMessage[] = [];
  const decoder = new NettyMessageDecoder({
    side: "client",
    maxFrameSize: 1 << 20,
    onMessage: (m) => messages.push(m),
  });
  try {
    for (const chunk of answer) decoder.feed(chunk);
  } catch {
    // only what decoded before matters
  }
  return messages;
}

/** Polls a gate once to surface a pending channel error (pollNext throws it). */
export function pollError(gate: { pollNext(): unknown }): unknown {
  try {
    const next = gate.pollNext() as { buffer?: { recycleBuffer(): void } } | undefined;
    next?.buffer?.recycleBuffer();
    return undefined;
  } catch (error) {
    return error;
  }
}

/**
 * What every network-shuffle transport must survive from a hostile peer: garbage sent to its data
 * server gets a fatal PROTOCOL ErrorResponse and only that connection closes while real consumers
 * keep being served; a "producer" that sends garbage fails the consumer's channels with a
 * PROTOCOL error, and the consumer drops the connection itself.
 */
export function describeHostilePeerSuite(
  name: string,
  createEnvironment: EnvironmentFactory,
  transport: HostilePeerTransport,
): void {
  describe(`the ${name} shuffle under hostile peers`, () => {
    const envs: NetworkShuffleEnvironment[] = [];
    const servers: { close(): Promise<void> }[] = [];

    afterEach(async () => {
      for (const server of servers.splice(0)) await server.close();
      for (const env of envs.splice(0)) await env.close();
    });

    async function start(): Promise<NetworkShuffleEnvironment> {
      const env = createEnvironment(environmentContext(config));
      envs.push(env);
      await env.start();
      return env;
    }

    it("answers garbage with a fatal PROTOCOL error, closes only that connection and keeps serving others", async () => {
      const producer = await start();
      const consumer = await start();
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ minLength: 9, maxLength: 256 }), async (bytes) => {
          bytes[4] = 0x00; // a wrong magic number: surely invalid
          const { answer, closed } = await transport.sendRaw(producer.getDataPort(), bytes);
          expect(closed).toBe(true);
          const errors = decodeAnswer(answer).filter((m): m is ErrorResponse => m.id === 1);
          expect(errors).toHaveLength(1);
          expect(errorFromErrorResponse(errors[0] as ErrorResponse).code).toBe(ErrorCodes.PROTOCOL);
        }),
        { numRuns: 25 },
      );
      // The server is unharmed: a real consumer still gets its data.
      const job = await deployAllToAll(producer, consumer, 1, 2, config);
      const checkers = await runAllToAll(job, 2_000, 8);
      expect(checkers.map((c) => c.nextSeq[0])).toEqual([2_000, 2_000]);
    });

    it("fails a consumer's channels with a PROTOCOL error when the 'producer' sends garbage", async () => {
      const consumer = await start();
      const producer = await start();
      const garbage = Buffer.alloc(64, 0x5a);
      garbage.writeInt32BE(64, 0); // a plausible length, then a wrong magic number
      const fake = await transport.startGarbageServer(garbage);
      servers.push(fake);
      const job = await deployAllToAll(producer, consumer, 1, 2, config, undefined, {
        advertisedPort: fake.port,
      });
      for (const writer of job.writers) writer.setup();
      for (const gate of job.gates) {
        gate.setup();
        gate.requestPartitions();
      }
      for (const gate of job.gates) {
        await expect.poll(() => gate.getFailureCause() ?? pollError(gate)).toBeDefined();
        const error = (gate.getFailureCause() ?? pollError(gate)) as {
          code?: string;
          message: string;
        };
        expect(error.code).toBe(ErrorCodes.PROTOCOL);
        expect(error.message).toMatch(/magic/i);
        await gate.close();
      }
      for (const writer of job.writers) writer.release();
      // The consumer dropped the broken connection itself.
      await expect.poll(() => consumer.getNumberOfClientConnections()).toBe(0);
    });
  });
}
