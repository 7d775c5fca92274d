import { ExecutionAttemptID, type LocalBufferPool } from "@sluice/core";
import { createPartitionInfo, createUnknownShuffleDescriptor } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import { LocalInputChannel } from "../consumer/local-input-channel.js";
import { UnknownInputChannel } from "../consumer/unknown-input-channel.js";
import {
  createGate,
  createWriter,
  registerPartition,
  SequenceChecker,
  testRecord,
  unitTestContext,
} from "../test-support/environment-harness.js";
import type { NetworkShuffleEnvironment } from "./network-shuffle-environment.js";
import { LocalShuffleServiceFactory } from "./network-shuffle-service-factory.js";

const SEGMENT_SIZE = 4096;
const config = {
  "taskmanager.memory.network.min": "1mb",
  "taskmanager.memory.segment-size": "4kb",
};

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("NetworkShuffleEnvironment in one process", () => {
  let env: NetworkShuffleEnvironment | undefined;

  afterEach(async () => {
    await env?.close();
    env = undefined;
  });

  it("replaces an unknown channel through updatePartitionInfo with a real descriptor, then data flows", async () => {
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(unitTestContext(config));
    expect(await env.start()).toBe(-1);
    const partition = await registerPartition(env);
    const descriptor = partition.shuffleDescriptor;
    const resultId = partition.partitionDescriptor.resultId;

    // The consumer is deployed first: its producer's location is unknown.
    const consumerAttempt = new ExecutionAttemptID(undefined, undefined, 0, 0);
    const gate = createGate(
      env,
      createUnknownShuffleDescriptor(descriptor.resultPartitionId),
      env.createShuffleIOOwnerContext("consumer", consumerAttempt),
    );
    gate.setup();
    gate.requestPartitions();
    expect(gate.getChannel(0)).toBeInstanceOf(UnknownInputChannel);
    expect(gate.pollNext()).toBeUndefined();

    const writer = createWriter(env, partition);
    writer.setup();
    for (let seq = 0; seq < 3; seq++) writer.emitRecord(testRecord(seq, 22), 0);
    writer.flushAll();
    expect(gate.pollNext()).toBeUndefined();

    // Another consumer attempt or data set is not affected.
    expect(
      env.updatePartitionInfo(new ExecutionAttemptID(), createPartitionInfo(resultId, descriptor)),
    ).toBe(false);
    expect(
      env.updatePartitionInfo(consumerAttempt, createPartitionInfo(resultId, descriptor)),
    ).toBe(true);
    expect(gate.getChannel(0)).toBeInstanceOf(LocalInputChannel);
    expect(
      env.updatePartitionInfo(consumerAttempt, createPartitionInfo(resultId, descriptor)),
    ).toBe(false);

    const checker = new SequenceChecker();
    writer.finish();
    while (!gate.isFinished()) {
      const next = gate.pollNext();
      if (next === undefined) {
        await gate.getAvailableFuture();
        continue;
      }
      if (next.buffer !== undefined) checker.accept(next.buffer);
    }
    expect(checker.next).toBe(3);
    await gate.close();
    writer.close();
    expect(writer.isReleased()).toBe(true);
    const pool = env.networkBufferPool;
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(pool.totalNumberOfMemorySegments);
  });

  it("stops a producer at its pool bound while the consumer does not read, then resumes and delivers everything", async () => {
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(unitTestContext(config));
    await env.start();
    const global = env.networkBufferPool;
    const partition = await registerPartition(env);
    const writer = createWriter(env, partition);
    const gate = createGate(env, partition.shuffleDescriptor);
    writer.setup();
    gate.setup();
    gate.requestPartitions();
    const outPool = writer.getBufferPool() as LocalBufferPool;
    // One subpartition: [2, 1 × 2 + 8] buffers, and max-buffers-per-channel 10.
    expect(outPool.getMaxNumberOfMemorySegments()).toBe(10);
    const padding = 1000; // 1016-byte records: about 4 per buffer, some spanning two

    let maxOutPoolUsed = 0;
    const sample = () => {
      maxOutPoolUsed = Math.max(maxOutPoolUsed, outPool.bestEffortGetNumOfUsedBuffers());
      expect(global.getNumberOfUsedMemorySegments()).toBeLessThanOrEqual(
        global.totalNumberOfMemorySegments,
      );
    };

    // Phase 1: the consumer does not read. The producer writes only while available.
    let emitted = 0;
    while (writer.isAvailable()) {
      writer.emitRecord(testRecord(emitted++, 12 + padding), 0);
      sample();
      expect(emitted).toBeLessThan(1_000); // it must stop on its own
    }
    const atBlock = emitted;
    expect(atBlock * (12 + padding + 4)).toBeLessThanOrEqual(11 * SEGMENT_SIZE);
    let resumed = false;
    void writer.getAvailableFuture().then(() => {
      resumed = true;
    });
    for (let i = 0; i < 20; i++) await turn();
    expect(resumed).toBe(false);
    expect(writer.isAvailable()).toBe(false);
    expect(emitted).toBe(atBlock);
    // Bounded: the pool's maximum, plus at most one overdraft buffer for a spanning record.
    expect(maxOutPoolUsed).toBeLessThanOrEqual(11);

    // Phase 2: a slow consumer (two buffers per turn); the producer resumes and finishes.
    const total = 2_000;
    const checker = new SequenceChecker();
    const produce = async () => {
      while (emitted < total) {
        if (!writer.isAvailable()) await writer.getAvailableFuture();
        writer.emitRecord(testRecord(emitted++, 12 + padding), 0);
        sample();
      }
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.finish();
    };
    const consume = async () => {
      while (!gate.isFinished()) {
        for (let i = 0; i < 2; i++) {
          const next = gate.pollNext();
          if (next === undefined) break;
          if (next.buffer !== undefined) checker.accept(next.buffer);
        }
        await turn();
      }
    };
    await Promise.all([produce(), consume()]);
    expect(resumed).toBe(true);
    expect(checker.next).toBe(total);
    expect(checker.hasUnfinishedData()).toBe(false);
    expect(maxOutPoolUsed).toBeLessThanOrEqual(11);
    expect(writer.metrics.backPressuredTimeMs).toBeGreaterThanOrEqual(0);

    await gate.close();
    writer.close();
    expect(global.getNumberOfAvailableMemorySegments()).toBe(global.totalNumberOfMemorySegments);
    expect(env.getPartitionsOccupyingLocalResources()).toEqual([]);
  });
});
