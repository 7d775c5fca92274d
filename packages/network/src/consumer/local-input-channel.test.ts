import {
  CancelledError,
  ErrorCodes,
  frameRecord,
  type NetworkBufferPool,
  PartitionNotFoundError,
  TaskEvent,
} from "@sluice/core";
import { expectSluiceError } from "@sluice/core/testing";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { PipelinedResultPartition } from "../partition/pipelined-result-partition.js";
import { ResultPartitionManager } from "../partition/result-partition-manager.js";
import { TaskEventDispatcher } from "../partition/task-event-publisher.js";
import { networkBufferPoolPerTest } from "../test-support/network-buffer-pool-per-test.js";
import {
  buildLocalInputChannel,
  buildPipelinedResultPartition,
  buildSingleInputGate,
} from "../testing/index.js";
import type { Backoff } from "./input-channel.js";
import type { LocalInputChannel } from "./local-input-channel.js";
import type { SingleInputGate } from "./single-input-gate.js";

const SEGMENT = 64;

interface Setup {
  readonly global: NetworkBufferPool;
  readonly manager: ResultPartitionManager;
  readonly partition: PipelinedResultPartition;
  readonly gate: SingleInputGate;
  readonly channel: LocalInputChannel;
  readonly requests: () => number;
}

const newGlobalPool = networkBufferPoolPerTest();

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
});

afterEach(() => {
  vi.useRealTimers();
});

function setUp(backoff: Backoff, events?: TaskEventDispatcher): Setup {
  const global = newGlobalPool(32, SEGMENT);
  const pool = global;
  const manager = new ResultPartitionManager();
  const spy = vi.spyOn(manager, "createSubpartitionView");
  const partition = buildPipelinedResultPartition({
    networkBufferPool: pool,
    partitionManager: manager,
    maxBuffers: 8,
    setup: false,
  });
  const gate = buildSingleInputGate({ networkBufferPool: pool, maxBuffers: 8 });
  const channel = buildLocalInputChannel({
    gate,
    partitionId: partition.partitionId,
    partitionManager: manager,
    backoff,
    ...(events === undefined ? {} : { taskEventPublisher: events }),
  });
  gate.setInputChannel(channel);
  gate.setup();
  return { global, manager, partition, gate, channel, requests: () => spy.mock.calls.length };
}

function pollError(gate: SingleInputGate): unknown {
  try {
    gate.pollNext();
  } catch (error) {
    return error;
  }
  return undefined;
}

async function cleanUp(s: Setup): Promise<void> {
  await s.gate.close();
  s.partition.close();
  s.partition.release();
  expect(s.global).toHaveAllSegmentsAvailable();
}

describe("LocalInputChannel partition requests", () => {
  it("retries PartitionNotFound with exponential backoff 100 → 200 → 400 ms, then fails", async () => {
    const s = setUp({ initialMs: 100, maxMs: 400 });
    s.gate.requestPartitions();
    expect(s.requests()).toBe(1);
    expect(s.channel.getCurrentBackoffMs()).toBe(100);

    const delays = [100, 200, 400];
    for (const [i, delay] of delays.entries()) {
      vi.advanceTimersByTime(delay - 1);
      expect(s.requests()).toBe(i + 1);
      expect(pollError(s.gate)).toBeUndefined();
      vi.advanceTimersByTime(1);
      expect(s.requests()).toBe(i + 2);
    }
    // The fourth "not found" comes after the maximum backoff was used: give up.
    expect(vi.getTimerCount()).toBe(0);
    expect(s.channel.getPartitionRequestRetries()).toBe(3);
    expect(s.gate.getPartitionRequestRetries()).toBe(3);
    expect(s.gate.isAvailable()).toBe(true);
    const error = expectSluiceError(
      pollError(s.gate),
      PartitionNotFoundError,
      ErrorCodes.PARTITION_NOT_FOUND,
    );
    expect(error.message).toContain(s.partition.partitionId.toString());
    expect(error.message).toContain("400 ms");
    expect(s.channel.getError()).toBe(error);
    await cleanUp(s);
  });

  it("caps the doubled backoff at the maximum", async () => {
    const s = setUp({ initialMs: 100, maxMs: 300 });
    s.gate.requestPartitions();
    const seen: number[] = [s.channel.getCurrentBackoffMs()];
    for (const delay of [100, 200]) {
      vi.advanceTimersByTime(delay);
      seen.push(s.channel.getCurrentBackoffMs());
    }
    expect(seen).toEqual([100, 200, 300]);
    vi.advanceTimersByTime(299);
    expect(s.requests()).toBe(3);
    vi.advanceTimersByTime(1);
    expect(s.requests()).toBe(4);
    expectSluiceError(pollError(s.gate), PartitionNotFoundError, ErrorCodes.PARTITION_NOT_FOUND);
    expect(vi.getTimerCount()).toBe(0);
    await cleanUp(s);
  });

  it("fails at once when the backoff is disabled (initial 0)", async () => {
    const s = setUp({ initialMs: 0, maxMs: 0 });
    s.gate.requestPartitions();
    expect(vi.getTimerCount()).toBe(0);
    expectSluiceError(pollError(s.gate), PartitionNotFoundError, ErrorCodes.PARTITION_NOT_FOUND);
    expect(s.requests()).toBe(1);
    await cleanUp(s);
  });

  it("picks up a partition that registers during the backoff", async () => {
    const s = setUp({ initialMs: 100, maxMs: 10_000 });
    s.gate.requestPartitions();
    vi.advanceTimersByTime(100); // second attempt, still missing
    s.partition.setup();
    s.partition.emitRecord(frameRecord(new Uint8Array(SEGMENT - 4)), 0);
    expect(s.gate.pollNext()).toBeUndefined();
    vi.advanceTimersByTime(199);
    expect(s.gate.pollNext()).toBeUndefined();
    vi.advanceTimersByTime(1);
    expect(s.requests()).toBe(3);
    const next = s.gate.pollNext();
    expect(next?.buffer?.getSize()).toBe(SEGMENT);
    next?.buffer?.recycleBuffer();
    expect(vi.getTimerCount()).toBe(0);
    expect(s.gate.getPartitionRequestRetries()).toBe(2);
    await cleanUp(s);
  });

  it("stops retrying once released", async () => {
    const s = setUp({ initialMs: 100, maxMs: 10_000 });
    s.gate.requestPartitions();
    expect(vi.getTimerCount()).toBe(1);
    await s.gate.close();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(60_000);
    expect(s.requests()).toBe(1);
    expect(() => s.channel.getNextBuffer()).toThrow(CancelledError);
    await cleanUp(s);
  });

  it("delivers task events to the producer's subscribers", async () => {
    const events = new TaskEventDispatcher();
    const s = setUp({ initialMs: 100, maxMs: 400 }, events);
    const seen: TaskEvent[] = [];
    const unsubscribe = events.subscribe(s.partition.partitionId, (event) => seen.push(event));
    const event = new TaskEvent("progress", new Uint8Array([1, 2, 3]));
    s.gate.sendTaskEvent(event);
    expect(seen).toEqual([event]);
    unsubscribe();
    expect(() => s.gate.sendTaskEvent(event)).toThrow(/no task event listener/);
    await cleanUp(s);
  });
});
