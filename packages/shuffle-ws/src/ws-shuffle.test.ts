import type { NetworkShuffleEnvironment } from "@sluice/network";
import { deployAllToAll, environmentContext, runAllToAll } from "@sluice/network/testing";
import { afterEach, describe, expect, it } from "vitest";
import { WsShuffleServiceFactory } from "./ws-shuffle-service-factory.js";

const config = {
  "taskmanager.memory.network.min": "8mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.partition-request-timeout": "2s",
};

describe("credit-based shuffle over WebSocket between two environments", () => {
  const envs: NetworkShuffleEnvironment[] = [];

  afterEach(async () => {
    for (const env of envs.splice(0)) await env.close();
  });

  async function startEnv(extra: Record<string, unknown> = {}): Promise<NetworkShuffleEnvironment> {
    const env = new WsShuffleServiceFactory().createShuffleEnvironment(
      environmentContext({ ...config, ...extra }),
    );
    envs.push(env);
    const port = await env.start();
    expect(port).toBeGreaterThan(0);
    return env;
  }

  async function exchange(
    producer: NetworkShuffleEnvironment,
    consumer: NetworkShuffleEnvironment,
    options: { consumerDelayMs?: number } = {},
  ) {
    const job = await deployAllToAll(producer, consumer, 2, 4, config);
    const checkers = await runAllToAll(job, 5_000, 40, options);
    for (const checker of checkers) expect(checker.nextSeq).toEqual([5_000, 5_000]);
    for (const gate of job.gates) await gate.close();
    for (const writer of job.writers) writer.close();
    // Let the cancel/close messages cross the connection before the pools are counted.
    await new Promise((r) => setTimeout(r, 50));
    for (const env of [producer, consumer]) {
      const pool = env.networkBufferPool;
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(pool.totalNumberOfMemorySegments);
    }
  }

  it("delivers every record exactly once and in order over remote channels, then pools are full", async () => {
    await exchange(await startEnv(), await startEnv());
  });

  it("delivers everything with tiny water marks and a slow consumer (backpressure through onDrain)", async () => {
    const marks = {
      "taskmanager.network.websocket.high-water-mark": "16kb",
      "taskmanager.network.websocket.low-water-mark": "4kb",
    };
    await exchange(await startEnv(marks), await startEnv(marks), { consumerDelayMs: 1 });
  });

  it("delivers everything with permessage-deflate enabled on both sides", async () => {
    const deflate = { "taskmanager.network.websocket.per-message-deflate": true };
    await exchange(await startEnv(deflate), await startEnv(deflate));
  });
});
