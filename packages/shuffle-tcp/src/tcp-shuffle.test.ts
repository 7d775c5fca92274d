import type { NetworkShuffleEnvironment } from "@sluice/network";
import { deployAllToAll, environmentContext, runAllToAll } from "@sluice/network/testing";
import { afterEach, describe, expect, it } from "vitest";
import { TcpShuffleServiceFactory } from "./tcp-shuffle-service-factory.js";

const config = {
  "taskmanager.memory.network.min": "8mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.partition-request-timeout": "2s",
};

describe("credit-based shuffle over TCP between two environments", () => {
  const envs: NetworkShuffleEnvironment[] = [];

  afterEach(async () => {
    for (const env of envs.splice(0)) await env.close();
  });

  async function startEnv(): Promise<NetworkShuffleEnvironment> {
    const env = new TcpShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
    envs.push(env);
    const port = await env.start();
    expect(port).toBeGreaterThan(0);
    return env;
  }

  it("delivers every record exactly once and in order over remote channels, then pools are full", async () => {
    const producer = await startEnv();
    const consumer = await startEnv();
    const job = await deployAllToAll(producer, consumer, 2, 4, config);
    const checkers = await runAllToAll(job, 10_000, 40);
    for (const checker of checkers) expect(checker.nextSeq).toEqual([10_000, 10_000]);
    for (const gate of job.gates) await gate.close();
    for (const writer of job.writers) writer.close();
    // All channels of the consumer share one connection to the producer.
    await new Promise((r) => setTimeout(r, 50));
    for (const env of [producer, consumer]) {
      const pool = env.networkBufferPool;
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(pool.totalNumberOfMemorySegments);
    }
  });
});
