import { afterEach, describe, expect, it } from "vitest";
import { deployAllToAll, environmentContext, runAllToAll } from "../testing/shuffle-fixture.js";
import type { NetworkShuffleEnvironment } from "./network-shuffle-environment.js";
import { LocalShuffleServiceFactory } from "./network-shuffle-service-factory.js";
import "@sluice/core/testing";

const config = {
  "taskmanager.memory.network.min": "4mb",
  "taskmanager.memory.segment-size": "4kb",
  "execution.buffer-timeout.interval": "10ms",
};

describe("in-process shuffle through local channels", () => {
  let env: NetworkShuffleEnvironment | undefined;

  afterEach(async () => {
    await env?.close();
    env = undefined;
  });

  it("delivers every record exactly once and in order per channel, then every pool is full again", async () => {
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
    expect(await env.start()).toBe(-1);
    const job = await deployAllToAll(env, env, 2, 4, config);
    const checkers = await runAllToAll(job, 20_000, 20);
    for (const checker of checkers) {
      expect(checker.nextSeq).toEqual([20_000, 20_000]);
      expect(checker.hasUnfinishedData()).toBe(false);
    }
    for (const gate of job.gates) {
      expect(gate.isFinished()).toBe(true);
      await gate.close();
    }
    for (const writer of job.writers) {
      expect(writer.isReleased()).toBe(true); // released on consumption
      writer.close();
    }
    const pool = env.networkBufferPool;
    expect(pool).toHaveAllSegmentsAvailable();
    expect(env.getPartitionsOccupyingLocalResources()).toEqual([]);
  });
});
