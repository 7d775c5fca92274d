import { ErrorCodes } from "@sluice/core";
import {
  type ErrorResponse,
  errorFromErrorResponse,
  type NettyMessage,
  NettyMessageDecoder,
} from "@sluice/network/plugin";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import {
  advertising,
  InProcessCluster,
  networkEnvironmentOf,
  type RawConfig,
} from "./in-process-cluster.js";

/** What the suite needs from a transport's test: raw access to its wire. */
export interface HostilePeerTransport {
  /** Sends `bytes` to a data server as one unit and resolves with the raw bytes it answered once it closed. */
  sendRaw(port: number, bytes: Uint8Array): Promise<{ answer: Buffer[]; closed: boolean }>;
  /** Starts a fake data server on 127.0.0.1 that answers every connection with `garbage`. */
  startGarbageServer(garbage: Buffer): Promise<{ port: number; close(): Promise<void> }>;
}

const CONFIG: RawConfig = {
  "taskmanager.memory.network.min": "8mb",
  "taskmanager.memory.network.max": "8mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.max-frame-size": "1mb",
};

/** Decodes what a data server answered, keeping what decoded before any error. */
export function decodeAnswer(answer: readonly Buffer[]): NettyMessage[] {
  const messages: NettyMessage[] = [];
  const decoder = new NettyMessageDecoder({
    side: "client",
    maxFrameSize: 1 << 20,
    onMessage: (m) => messages.push(m),
  });
  try {
    for (const chunk of answer) decoder.feed(chunk);
  } catch (error) {
    // Garbage may follow the server's last frame; only what decoded before it matters here.
    if (messages.length === 0) throw error;
  }
  return messages;
}

/**
 * What every network-shuffle transport must survive from a hostile peer: garbage sent to its data
 * server gets a fatal PROTOCOL ErrorResponse and only that connection closes while real consumers
 * keep being served; a "producer" that sends garbage fails the consumer with a PROTOCOL error,
 * and the consumer drops the connection itself.
 *
 * @param factory - the plugin's `shuffle-service-factory.class` value.
 */
export function describeHostilePeerSuite(
  name: string,
  factory: string,
  transport: HostilePeerTransport,
): void {
  describe(`the ${name} shuffle under hostile peers`, () => {
    let cluster: InProcessCluster;
    const servers: { close(): Promise<void> }[] = [];

    afterEach(async () => {
      for (const server of servers.splice(0)) await server.close();
      await cluster.close();
    });

    it("answers garbage with a fatal PROTOCOL error, closes only that connection and keeps serving others", async () => {
      cluster = new InProcessCluster(factory, CONFIG);
      const producer = await cluster.startExecutor();
      const consumer = await cluster.startExecutor();
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ minLength: 9, maxLength: 256 }), async (bytes) => {
          bytes[4] = 0x00; // a wrong magic number: surely invalid
          const { answer, closed } = await transport.sendRaw(producer.location.dataPort, bytes);
          expect(closed).toBe(true);
          const errors = decodeAnswer(answer).filter((m): m is ErrorResponse => m.id === 1);
          expect(errors).toHaveLength(1);
          expect(errorFromErrorResponse(errors[0] as ErrorResponse).code).toBe(ErrorCodes.PROTOCOL);
        }),
        { numRuns: 25 },
      );
      // The server is unharmed: a real consumer still gets its data.
      const { execution } = await cluster.deploy(
        { producers: 1, consumers: 2, plan: { records: 4_000, padding: 8 } },
        producer,
        consumer,
      );
      expect((await execution.terminated).status).toBe("FINISHED");
    });

    it("fails a consumer with a PROTOCOL error when the 'producer' sends garbage", async () => {
      cluster = new InProcessCluster(factory, CONFIG);
      const consumer = await cluster.startExecutor();
      const producer = await cluster.startExecutor();
      const garbage = Buffer.alloc(64, 0x5a);
      garbage.writeInt32BE(64, 0); // a plausible length, then a wrong magic number
      const fake = await transport.startGarbageServer(garbage);
      servers.push(fake);
      const { consumers } = await cluster.deploy(
        { producers: 1, consumers: 2, plan: { records: 10, padding: 8 } },
        advertising(producer, fake.port),
        consumer,
      );
      for (const sink of consumers) {
        await expect.poll(() => sink.failureCause).toBeDefined();
        expect(sink.failureCause).toMatchObject({ code: ErrorCodes.PROTOCOL });
        expect(sink.failureCause?.message).toMatch(/magic/i);
      }
      // The consumer dropped the broken connection itself.
      await expect
        .poll(() => networkEnvironmentOf(consumer).getNumberOfClientConnections())
        .toBe(0);
    });
  });
}
