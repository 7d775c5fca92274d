import {
  CancelledError,
  CheckpointAlignment,
  CheckpointBarrier,
  DEFAULT_CHECKPOINT_OPTIONS,
  EndOfPartitionEvent,
  ErrorCodes,
  frameRecord,
  NetworkBufferPool,
  ProducerFailedError,
  ResultPartitionID,
} from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import type { BufferOrEvent } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import type { PipelinedResultPartition } from "../partition/pipelined-result-partition.js";
import { ResultPartitionManager } from "../partition/result-partition-manager.js";
import {
  buildLocalInputChannel,
  buildPipelinedResultPartition,
  buildSingleInputGate,
  buildUnknownInputChannel,
} from "../testing/index.js";
import { BufferDebloater } from "./buffer-debloater.js";
import type { Backoff } from "./input-channel.js";
import { LocalInputChannel } from "./local-input-channel.js";
import type { SingleInputGate, SingleInputGateOptions } from "./single-input-gate.js";
import { UnknownInputChannel } from "./unknown-input-channel.js";

const SEGMENT = 64;
/** A record of this many payload bytes fills one buffer exactly. */
const FULL = SEGMENT - 4;
const BACKOFF: Backoff = { initialMs: 100, maxMs: 1_000 };

interface LocalJob {
  readonly global: NetworkBufferPool;
  readonly manager: ResultPartitionManager;
  readonly partitions: PipelinedResultPartition[];
  readonly gate: SingleInputGate;
}

const globals: NetworkBufferPool[] = [];

afterEach(() => {
  for (const global of globals.splice(0)) global.destroy();
});

/** `channels` producers of one subpartition each, read by one gate through local channels. */
function localJob(
  channels: number,
  unknown: readonly number[] = [],
  gateOptions: Partial<SingleInputGateOptions> = {},
): LocalJob {
  const global = new NetworkBufferPool(256, SEGMENT);
  globals.push(global);
  const manager = new ResultPartitionManager();
  const partitions = Array.from({ length: channels }, (_, i) =>
    buildPipelinedResultPartition({
      networkBufferPool: global,
      partitionManager: manager,
      owningTaskName: `producer ${i}`,
      maxBuffers: 20,
      setup: false,
    }),
  );
  const gate = buildSingleInputGate({
    networkBufferPool: global,
    maxBuffers: 8,
    numberOfInputChannels: channels,
    ...gateOptions,
  });
  partitions.forEach((partition, i) => {
    const channel = { gate, channelIndex: i, partitionId: partition.partitionId, backoff: BACKOFF };
    gate.setInputChannel(
      unknown.includes(i)
        ? buildUnknownInputChannel(channel)
        : buildLocalInputChannel({ ...channel, partitionManager: manager }),
    );
  });
  return { global, manager, partitions, gate };
}

function expectAllSegmentsBack(global: NetworkBufferPool): void {
  expect(global).toHaveAllSegmentsAvailable();
}

/** Polls until the gate has nothing right now; recycles data buffers. */
function pollAll(gate: SingleInputGate): BufferOrEvent[] {
  const out: BufferOrEvent[] = [];
  for (let next = gate.pollNext(); next !== undefined; next = gate.pollNext()) {
    next.buffer?.recycleBuffer();
    out.push(next);
  }
  return out;
}

async function closeAll(job: LocalJob): Promise<void> {
  await job.gate.close();
  for (const partition of job.partitions) {
    partition.close();
    partition.release();
  }
}

describe("SingleInputGate with local channels", () => {
  it("serves channels with data round-robin (InputGateFairnessTest)", async () => {
    const job = localJob(3);
    const buffersPerChannel = [10, 3, 6];
    job.partitions.forEach((partition, i) => {
      partition.setup();
      for (let b = 0; b < (buffersPerChannel[i] as number); b++) {
        partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
      }
    });
    job.gate.setup();
    job.gate.requestPartitions();

    const polled = [0, 0, 0];
    const order: number[] = [];
    for (let next = job.gate.pollNext(); next !== undefined; next = job.gate.pollNext()) {
      expect(next.buffer?.getSize()).toBe(SEGMENT);
      next.buffer?.recycleBuffer();
      order.push(next.channelIndex);
      polled[next.channelIndex] = (polled[next.channelIndex] as number) + 1;
      // Among the channels that still have data, no channel is ahead by more than one buffer.
      const active = [0, 1, 2].filter(
        (c) => (polled[c] as number) < (buffersPerChannel[c] as number),
      );
      const counts = active.map((c) => polled[c] as number);
      if (counts.length > 0)
        expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    }
    expect(order).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 2, 0, 2, 0, 2, 0, 0, 0, 0]);
    expect(polled).toEqual(buffersPerChannel);
    expect(job.gate.metrics.numBuffersIn).toBe(19);
    expect(job.gate.metrics.numBytesIn).toBe(19 * SEGMENT);
    await closeAll(job);
    expectAllSegmentsBack(job.global);
  });

  it("keeps alternating when channels get data while the gate is being read", async () => {
    const job = localJob(2);
    for (const partition of job.partitions) partition.setup();
    job.gate.setup();
    job.gate.requestPartitions();
    expect(job.gate.pollNext()).toBeUndefined();
    const [p0, p1] = job.partitions as [PipelinedResultPartition, PipelinedResultPartition];
    for (let i = 0; i < 4; i++) p0.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    const first = job.gate.pollNext();
    expect(first?.channelIndex).toBe(0);
    first?.buffer?.recycleBuffer();
    for (let i = 0; i < 4; i++) p1.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    // Channel 0 was re-queued after its first buffer; channel 1 queues behind it.
    expect(pollAll(job.gate).map((b) => b.channelIndex)).toEqual([0, 1, 0, 1, 0, 1, 1]);
    await closeAll(job);
    expectAllSegmentsBack(job.global);
  });

  it("is finished once every channel delivered EndOfPartition, and its availability resolves", async () => {
    const job = localJob(2);
    for (const partition of job.partitions) partition.setup();
    job.gate.setup();
    job.gate.requestPartitions();
    expect(job.gate.pollNext()).toBeUndefined();
    expect(job.gate.isAvailable()).toBe(false);
    let woken = false;
    const waiting = job.gate.getAvailableFuture().then(() => {
      woken = true;
    });

    const [p0, p1] = job.partitions as [PipelinedResultPartition, PipelinedResultPartition];
    p0.emitRecord(frameRecord(new Uint8Array(10)), 0);
    p0.finish();
    await waiting;
    expect(woken).toBe(true);
    const fromFirst = pollAll(job.gate);
    expect(fromFirst.map((b) => (b.event === undefined ? "data" : "event"))).toEqual([
      "data",
      "event",
    ]);
    expect(fromFirst[1]?.event).toBe(EndOfPartitionEvent.INSTANCE);
    expect(job.gate.isFinished()).toBe(false);
    expect(job.gate.isAvailable()).toBe(false);
    // The first producer's subpartition counts as consumed as soon as its EndOfPartition was
    // read; the partition is released once its producer closes too (Flink's n + 1 users).
    expect(p0.isReleased()).toBe(false);
    p0.close();
    expect(p0.isReleased()).toBe(true);

    const last = job.gate.getAvailableFuture();
    p1.finish();
    await last;
    const fromSecond = pollAll(job.gate);
    expect(fromSecond.map((b) => b.event)).toEqual([EndOfPartitionEvent.INSTANCE]);
    expect(job.gate.isFinished()).toBe(true);
    expect(job.gate.isAvailable()).toBe(true);
    await job.gate.getAvailableFuture();
    expect(job.gate.pollNext()).toBeUndefined();
    p1.close();
    expect(p1.isReleased()).toBe(true);
    expect(job.manager.getUnreleasedPartitions()).toEqual([]);
    await closeAll(job);
    expectAllSegmentsBack(job.global);
  });

  it("recycles everything on close: queued data, the views and the floating pool", async () => {
    const job = localJob(2);
    for (const partition of job.partitions) {
      partition.setup();
      for (let i = 0; i < 3; i++) partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
      partition.emitRecord(frameRecord(new Uint8Array(10)), 0);
    }
    job.gate.setup();
    job.gate.requestPartitions();
    const held = job.gate.pollNext();
    expect(held?.buffer).toBeDefined();
    const pools = job.global.getNumberOfRegisteredBufferPools();
    expect(pools).toBe(3); // two output pools and the gate's floating pool

    await job.gate.close();
    expect(job.gate.isClosed()).toBe(true);
    expectError(() => job.gate.pollNext(), CancelledError, ErrorCodes.CANCELLED);
    // Closing released the views: the producers' partitions were consumed and released.
    for (const partition of job.partitions) expect(partition.isReleased()).toBe(true);
    expect(job.global.getNumberOfRegisteredBufferPools()).toBe(0);
    expect(job.global.getNumberOfUsedMemorySegments()).toBe(1); // the buffer the task holds
    held?.buffer?.recycleBuffer();
    await job.gate.close(); // idempotent
    expectAllSegmentsBack(job.global);
  });

  it("surfaces a producer failure as ProducerFailedError carrying the producer's message", async () => {
    const job = localJob(2);
    for (const partition of job.partitions) partition.setup();
    job.gate.setup();
    job.gate.requestPartitions();
    const [p0, p1] = job.partitions as [PipelinedResultPartition, PipelinedResultPartition];
    p1.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    const cause = new Error("disk on fire");
    p0.fail(cause);
    const polled: BufferOrEvent[] = [];
    const error = expectError(
      () => {
        for (let next = job.gate.pollNext(); next !== undefined; next = job.gate.pollNext()) {
          next.buffer?.recycleBuffer();
          polled.push(next);
        }
      },
      ProducerFailedError,
      ErrorCodes.PRODUCER_FAILED,
    );
    expect(error.message).toContain("disk on fire");
    expect(error.message).toContain(p0.partitionId.toString());
    expect(error.cause).toBe(cause);
    // The failure sticks: later polls throw the same error.
    expect(() => job.gate.pollNext()).toThrow(error);
    expect(job.gate.getFailureCause()).toBe(error);
    await closeAll(job);
    expectAllSegmentsBack(job.global);
  });

  it("replaces an UnknownInputChannel with updateInputChannel, then data flows", async () => {
    const job = localJob(2, [1]);
    for (const partition of job.partitions) partition.setup();
    job.gate.setup();
    job.gate.requestPartitions();
    const [p0, p1] = job.partitions as [PipelinedResultPartition, PipelinedResultPartition];
    p1.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    p0.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    expect(pollAll(job.gate).map((b) => b.channelIndex)).toEqual([0]);
    expect(job.gate.getChannel(1)).toBeInstanceOf(UnknownInputChannel);

    const unknown = job.gate.getChannel(1);
    const replaced = job.gate.updateInputChannel(
      p1.partitionId.partitionId,
      (old) =>
        new LocalInputChannel(
          job.gate,
          old.channelIndex,
          old.partitionId,
          old.subpartitionIndex,
          job.manager,
          BACKOFF,
        ),
    );
    expect(replaced).toBe(1);
    expect(unknown.isReleased()).toBe(true);
    expect(job.gate.getChannel(1)).toBeInstanceOf(LocalInputChannel);
    // A second update for the same partition finds no unknown channel.
    expect(job.gate.updateInputChannel(p1.partitionId.partitionId, () => unknown)).toBe(0);

    // The new channel requested its subpartition at once: the queued buffer is there.
    expect(pollAll(job.gate).map((b) => b.channelIndex)).toEqual([1]);
    p1.finish();
    p0.finish();
    const rest = pollAll(job.gate);
    expect(rest.map((b) => b.event)).toEqual([
      EndOfPartitionEvent.INSTANCE,
      EndOfPartitionEvent.INSTANCE,
    ]);
    expect(job.gate.isFinished()).toBe(true);
    await closeAll(job);
    expectAllSegmentsBack(job.global);
  });
});

describe("SingleInputGate inPoolUsage", () => {
  it("counts remote channels' exclusive buffers together with the floating pool, as Flink does", async () => {
    const global = new NetworkBufferPool(64, SEGMENT);
    globals.push(global);
    const gate = buildSingleInputGate({
      networkBufferPool: global,
      maxBuffers: 4,
      numberOfInputChannels: 2,
    });
    // Two channels, each with 4 exclusive buffers of which 3 hold data.
    for (let i = 0; i < 2; i++) {
      const channel = buildUnknownInputChannel({
        gate,
        channelIndex: i,
        partitionId: new ResultPartitionID(),
        backoff: BACKOFF,
      });
      Object.assign(channel, { getExclusiveBufferUsage: () => ({ used: 3, total: 4 }) });
      gate.setInputChannel(channel);
    }
    gate.setup();
    const floating = gate.getBufferPool();
    // Floating pool: none used; its size is whatever the NetworkBufferPool granted.
    const expected = 6 / (8 + floating.getNumBuffers());
    expect(gate.metrics.inPoolUsage()).toBeCloseTo(expected, 10);
    const borrowed = floating.requestBuffer();
    expect(gate.metrics.inPoolUsage()).toBeCloseTo(7 / (8 + floating.getNumBuffers()), 10);
    borrowed?.recycleBuffer();
    await gate.close();
    expectAllSegmentsBack(global);
  });

  it("counts floating buffers a channel borrowed but has not filled yet as free", async () => {
    const global = new NetworkBufferPool(64, SEGMENT);
    globals.push(global);
    const gate = buildSingleInputGate({ networkBufferPool: global, maxBuffers: 4 });
    const channel = buildUnknownInputChannel({
      gate,
      partitionId: new ResultPartitionID(),
      backoff: BACKOFF,
    });
    // The channel holds two borrowed floating buffers, one of them still empty (credit).
    Object.assign(channel, {
      getExclusiveBufferUsage: () => ({ used: 1, total: 2 }),
      getNumberOfAvailableFloatingBuffers: () => 1,
    });
    gate.setInputChannel(channel);
    gate.setup();
    const floating = gate.getBufferPool();
    const borrowed = [floating.requestBuffer(), floating.requestBuffer()];
    expect(gate.getBufferUsage()).toEqual({
      exclusiveUsed: 1,
      exclusiveTotal: 2,
      floatingUsed: 1,
      floatingTotal: floating.getNumBuffers(),
    });
    for (const buffer of borrowed) buffer?.recycleBuffer();
    await gate.close();
    expectAllSegmentsBack(global);
  });
});

describe("SingleInputGate priority and buffer debloating", () => {
  const unaligned = (id: bigint) =>
    new CheckpointBarrier(id, 0n, {
      ...DEFAULT_CHECKPOINT_OPTIONS,
      alignment: CheckpointAlignment.UNALIGNED,
    });

  it("serves a channel with a priority event before the channels holding data", async () => {
    const job = localJob(3);
    for (const partition of job.partitions) partition.setup();
    job.gate.setup();
    job.gate.requestPartitions();
    const [p0, p1, p2] = job.partitions as [
      PipelinedResultPartition,
      PipelinedResultPartition,
      PipelinedResultPartition,
    ];
    for (const partition of [p0, p1, p2]) {
      partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
      partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    }
    expect(job.gate.hasPriorityEvent()).toBe(false);
    const priority = job.gate.getPriorityEventAvailableFuture();
    p2.broadcastEvent(unaligned(1n), true);
    await priority;
    expect(job.gate.hasPriorityEvent()).toBe(true);
    // The barrier of channel 2 overtakes its own data and the data of channels 0 and 1.
    const first = job.gate.pollNext();
    expect(first).toMatchObject({ channelIndex: 2, hasPriority: true });
    expect(first?.event).toMatchObject({ kind: "CheckpointBarrier", id: 1n });
    expect(job.gate.hasPriorityEvent()).toBe(false);
    expect(pollAll(job.gate).map((item) => item.channelIndex)).toEqual([0, 1, 2, 0, 1, 2]);
    await closeAll(job);
    expectAllSegmentsBack(job.global);
  });

  it("announces the debloated buffer size to its producers, clamped to the minimum", async () => {
    let now = 0;
    const debloater = new BufferDebloater({
      targetMillis: 1_000,
      maxBufferSize: SEGMENT,
      minBufferSize: 16,
      thresholdPercentages: 0,
      numberOfSamples: 1,
    });
    const job = localJob(2, [], { bufferDebloater: debloater, throughputClock: () => now });
    for (const partition of job.partitions) partition.setup();
    job.gate.setup();
    job.gate.requestPartitions();
    const [p0, p1] = job.partitions as [PipelinedResultPartition, PipelinedResultPartition];
    p0.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    p1.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    // Two full buffers (2 × 64 bytes) take 4 s to consume: 32 bytes/s, so 1 s of data is 32
    // bytes, spread over the buffers in use (at least one): 32 bytes per buffer.
    now += 4_000;
    expect(pollAll(job.gate)).toHaveLength(2);
    // Time while the gate is empty does not count.
    now += 60_000;
    job.gate.triggerDebloating();
    expect(job.gate.getLastThroughput()).toBe(32);
    expect(p0.getSubpartition(0).bufferSizeHint()).toBe(32);
    expect(p1.getSubpartition(0).bufferSizeHint()).toBe(32);
    // Slower still: the size goes to the minimum, never below.
    p0.emitRecord(frameRecord(new Uint8Array(4)), 0);
    p0.flushAll();
    now += 10_000;
    expect(pollAll(job.gate)).toHaveLength(1);
    job.gate.triggerDebloating();
    expect(p0.getSubpartition(0).bufferSizeHint()).toBe(16);
    await closeAll(job);
    expectAllSegmentsBack(job.global);
  });
});
