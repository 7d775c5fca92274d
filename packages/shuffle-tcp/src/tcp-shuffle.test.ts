import { TaskEvent } from "@sluice/core";
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

describe("task events sent upstream over TCP", () => {
  const envs: NetworkShuffleEnvironment[] = [];

  afterEach(async () => {
    for (const env of envs.splice(0)) await env.close();
  });

  it("delivers a consumer's task event to the producer's subscribers, and fails the channel when nobody listens", async () => {
    const received: string[] = [];
    const producer = new TcpShuffleServiceFactory().createShuffleEnvironment(
      environmentContext(config),
    );
    const consumer = new TcpShuffleServiceFactory().createShuffleEnvironment(
      environmentContext(config),
    );
    envs.push(producer, consumer);
    await producer.start();
    await consumer.start();
    const job = await deployAllToAll(producer, consumer, 1, 2, config);
    const [writer] = job.writers;
    const [gate0, gate1] = job.gates;
    if (writer === undefined || gate0 === undefined || gate1 === undefined) throw new Error("job");
    writer.setup();
    for (const gate of job.gates) {
      gate.setup();
      gate.requestPartitions();
    }
    const unsubscribe = producer.taskEventDispatcher.subscribe(writer.partitionId, (event) =>
      received.push(`${event.typeName}:${Buffer.from(event.payload).toString()}`),
    );
    // The channel needs its connection before it can send upstream.
    await expect
      .poll(() => {
        try {
          gate0.sendTaskEvent(new TaskEvent("superstep", Buffer.from("7")));
          return true;
        } catch {
          return false;
        }
      })
      .toBe(true);
    await expect.poll(() => received).toEqual(["superstep:7"]);
    unsubscribe();
    await expect
      .poll(() => {
        try {
          gate1.sendTaskEvent(new TaskEvent("superstep", Buffer.from("8")));
          return true;
        } catch {
          return false;
        }
      })
      .toBe(true);
    await expect
      .poll(() => {
        try {
          gate1.pollNext();
          return undefined;
        } catch (error) {
          return (error as Error).message;
        }
      })
      .toMatch(/no task event listener/);
    expect(received).toEqual(["superstep:7"]);
    for (const gate of job.gates) await gate.close();
    writer.release();
  });
});
