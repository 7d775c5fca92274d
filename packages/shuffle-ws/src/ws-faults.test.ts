import { ErrorCodes } from "@sluice/core";
import {
  errorFromErrorResponse,
  type NettyMessage,
  NettyMessageDecoder,
  type NetworkShuffleEnvironment,
} from "@sluice/network";
import {
  deployAllToAll,
  environmentContext,
  type RawConfig,
  runAllToAll,
} from "@sluice/network/testing";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { WsShuffleServiceFactory } from "./ws-shuffle-service-factory.js";
import { WS_SHUFFLE_PATH } from "./ws-transport.js";

const config: RawConfig = {
  "taskmanager.memory.network.min": "8mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.max-frame-size": "1mb",
};

/** Sends one binary message to the data server; collects its answers until it closes. */
function sendRaw(
  port: number,
  bytes: Uint8Array,
): Promise<{ messages: NettyMessage[]; closed: boolean }> {
  return new Promise((resolve) => {
    const messages: NettyMessage[] = [];
    const decoder = new NettyMessageDecoder({
      side: "client",
      maxFrameSize: 1 << 20,
      onMessage: (m) => messages.push(m),
    });
    const ws = new WebSocket(`ws://127.0.0.1:${port}${WS_SHUFFLE_PATH}`);
    const timer = setTimeout(() => {
      ws.terminate();
      resolve({ messages, closed: false });
    }, 5_000);
    ws.on("open", () => ws.send(bytes));
    ws.on("message", (data: Buffer) => {
      try {
        decoder.feed(data);
      } catch {
        // only what decoded before matters here
      }
    });
    ws.on("error", () => {});
    ws.on("close", () => {
      clearTimeout(timer);
      resolve({ messages, closed: true });
    });
  });
}

describe("the WebSocket shuffle under hostile peers", () => {
  const envs: NetworkShuffleEnvironment[] = [];
  const servers: WebSocketServer[] = [];

  afterEach(async () => {
    for (const server of servers.splice(0)) {
      for (const client of server.clients) client.terminate();
      await new Promise((r) => server.close(r));
    }
    for (const env of envs.splice(0)) await env.close();
  });

  async function start(): Promise<NetworkShuffleEnvironment> {
    const env = new WsShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
    envs.push(env);
    await env.start();
    return env;
  }

  it("answers garbage messages with a fatal PROTOCOL error and keeps serving real consumers", async () => {
    const producer = await start();
    const consumer = await start();
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 9, maxLength: 256 }), async (bytes) => {
        bytes[4] = 0x00; // a wrong magic number: surely invalid
        const { messages, closed } = await sendRaw(producer.getDataPort(), bytes);
        expect(closed).toBe(true);
        const errors = messages.filter((m): m is Extract<NettyMessage, { id: 1 }> => m.id === 1);
        expect(errors).toHaveLength(1);
        expect(errorFromErrorResponse(errors[0] as Extract<NettyMessage, { id: 1 }>).code).toBe(
          ErrorCodes.PROTOCOL,
        );
      }),
      { numRuns: 25 },
    );
    const job = await deployAllToAll(producer, consumer, 1, 2, config);
    const checkers = await runAllToAll(job, 2_000, 8);
    expect(checkers.map((c) => c.nextSeq[0])).toEqual([2_000, 2_000]);
  });

  it("fails a consumer's channels with a protocol error when the 'producer' sends garbage, without crashing", async () => {
    const consumer = await start();
    const producer = await start();
    // A fake data server that answers every connection with random bytes.
    const fake = new WebSocketServer({ host: "127.0.0.1", port: 0, path: WS_SHUFFLE_PATH });
    servers.push(fake);
    await new Promise((r) => fake.once("listening", r));
    const garbage = Buffer.from(
      fc.sample(fc.uint8Array({ minLength: 64, maxLength: 64 }), { numRuns: 1, seed: 7 })[0] ?? [],
    );
    garbage[4] = 0x00;
    fake.on("connection", (ws) => ws.send(garbage));
    const port = (fake.address() as { port: number }).port;
    const job = await deployAllToAll(producer, consumer, 1, 2, config, undefined, {
      advertisedPort: port,
    });
    for (const writer of job.writers) writer.setup();
    for (const gate of job.gates) {
      gate.setup();
      gate.requestPartitions();
    }
    for (const gate of job.gates) {
      let error: unknown;
      for (let i = 0; i < 100 && error === undefined; i++) {
        try {
          gate.pollNext();
          await Promise.race([gate.getAvailableFuture(), new Promise((r) => setTimeout(r, 50))]);
        } catch (e) {
          error = e;
        }
      }
      expect([ErrorCodes.PROTOCOL, ErrorCodes.REMOTE_TRANSPORT]).toContain(
        (error as { code?: string }).code,
      );
      await gate.close();
    }
    for (const writer of job.writers) writer.release();
  });
});
