import {
  CancelCheckpointMarker,
  DataType,
  ErrorCodes,
  frameRecord,
  IllegalStateError,
  InputChannelID,
  type NetworkBufferPool,
  PartitionNotFoundError,
  ResultPartitionID,
  type SluiceError,
} from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { PipelinedResultPartition } from "../../partition/pipelined-result-partition.js";
import { ResultPartitionManager } from "../../partition/result-partition-manager.js";
import { networkBufferPoolPerTest } from "../../test-support/network-buffer-pool-per-test.js";
import { buildPipelinedResultPartition } from "../../testing/index.js";
import {
  CreditBasedSequenceNumberingViewReader,
  type ReaderBuffer,
  type ReaderQueue,
} from "./credit-based-sequence-numbering-view-reader.js";

const SEGMENT = 64;
const FULL = SEGMENT - 4;

class RecordingQueue implements ReaderQueue {
  nonEmpty = 0;
  readonly failures: Error[] = [];
  notifyReaderNonEmpty(): void {
    this.nonEmpty++;
  }
  notifyReaderFailed(_reader: CreditBasedSequenceNumberingViewReader, cause: Error): void {
    this.failures.push(cause);
  }
}

interface Setup {
  readonly global: NetworkBufferPool;
  readonly manager: ResultPartitionManager;
  readonly partition: PipelinedResultPartition;
  readonly queue: RecordingQueue;
}

const newGlobalPool = networkBufferPoolPerTest();

afterEach(() => {
  vi.useRealTimers();
});

function setUp(): Setup {
  const global = newGlobalPool(32, SEGMENT);
  const pool = global;
  const manager = new ResultPartitionManager();
  const partition = buildPipelinedResultPartition({
    networkBufferPool: pool,
    partitionManager: manager,
    maxBuffers: 16,
    setup: false,
  });
  return { global, manager, partition, queue: new RecordingQueue() };
}

function reader(s: Setup, initialCredit: number): CreditBasedSequenceNumberingViewReader {
  const r = new CreditBasedSequenceNumberingViewReader(
    new InputChannelID(),
    initialCredit,
    s.queue,
  );
  r.requestSubpartitionViewOrRegisterListener(s.manager, s.partition.partitionId, 0, 10_000);
  return r;
}

function next(r: CreditBasedSequenceNumberingViewReader): ReaderBuffer {
  const value = r.getNextBuffer();
  if (value === undefined) throw new Error("nothing to send");
  value.buffer.recycleBuffer();
  return value;
}

function expectAllSegmentsBack(s: Setup): void {
  expect(s.global).toHaveAllSegmentsAvailable();
}

describe("CreditBasedSequenceNumberingViewReader", () => {
  it("hands out data buffers only against credit, and events without credit", () => {
    const s = setUp();
    s.partition.setup();
    const r = reader(s, 0);
    s.partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    s.partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    s.partition.emitRecord(frameRecord(new Uint8Array(10)), 0); // a third, unfinished buffer
    expect(s.queue.nonEmpty).toBeGreaterThan(0);
    expect(r.isAvailable()).toBe(false); // data, but no credit
    expect(r.needAnnounceBacklog()).toBe(true);
    expect(r.getBacklog()).toBe(2);

    r.addCredit(1);
    expect(r.isAvailable()).toBe(true);
    const first = next(r);
    expect(first.buffer.getDataType()).toBe(DataType.DATA_BUFFER);
    expect([first.sequenceNumber, first.backlog, first.moreAvailable]).toEqual([0, 1, false]);
    expect(r.getNumCreditsAvailable()).toBe(0);
    expect(r.isAvailable()).toBe(false);

    // A priority event overtakes the waiting data and needs no credit.
    s.partition.broadcastEvent(new CancelCheckpointMarker(1n), true);
    expect(r.isAvailable()).toBe(true);
    const event = next(r);
    expect(event.buffer.getDataType()).toBe(DataType.PRIORITIZED_EVENT_BUFFER);
    expect([event.sequenceNumber, event.moreAvailable]).toEqual([1, false]);
    expect(r.getNumCreditsAvailable()).toBe(0);

    r.addCredit(2);
    s.partition.finish(); // finishes the third buffer and queues EndOfPartition behind it
    const second = next(r);
    expect([second.sequenceNumber, second.backlog, second.moreAvailable]).toEqual([2, 1, true]);
    const third = next(r);
    // The next item is an event: more is available even though the credit is used up.
    expect([third.sequenceNumber, third.backlog, third.moreAvailable]).toEqual([3, 0, true]);
    expect(r.getNumCreditsAvailable()).toBe(0);
    const end = next(r);
    expect(end.buffer.isBuffer()).toBe(false);
    expect([end.sequenceNumber, end.moreAvailable]).toEqual([4, false]);

    r.releaseAllResources();
    s.partition.close();
    expect(s.partition.isReleased()).toBe(true); // consumed, and its producer closed
    expectAllSegmentsBack(s);
  });

  it("starts with the initial credit and refuses to hand out data beyond it", () => {
    const s = setUp();
    s.partition.setup();
    const r = reader(s, 2);
    for (let i = 0; i < 3; i++) s.partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    expect(r.getNumCreditsAvailable()).toBe(2);
    expect(r.needAnnounceBacklog()).toBe(false);
    expect(next(r).moreAvailable).toBe(true);
    expect(next(r).moreAvailable).toBe(false);
    expect(r.isAvailable()).toBe(false);
    // Taking a data buffer without credit would break the protocol: it is an illegal state.
    expectError(() => r.getNextBuffer(), IllegalStateError, ErrorCodes.ILLEGAL_STATE);
    r.releaseAllResources();
    expectAllSegmentsBack(s);
  });

  it("resets the credit on resume when the consumer has no exclusive buffers", () => {
    const s = setUp();
    s.partition.setup();
    const withoutExclusive = reader(s, 0);
    withoutExclusive.addCredit(3);
    withoutExclusive.resumeConsumption();
    expect(withoutExclusive.getNumCreditsAvailable()).toBe(0);
    withoutExclusive.releaseAllResources();
    expectAllSegmentsBack(s);
    s.global.destroy();

    const s2 = setUp();
    s2.partition.setup();
    const withExclusive = reader(s2, 2);
    withExclusive.addCredit(1);
    withExclusive.resumeConsumption();
    expect(withExclusive.getNumCreditsAvailable()).toBe(3);
    withExclusive.releaseAllResources();
    expectAllSegmentsBack(s2);
  });

  it("gets its view once a late partition registers, or reports PartitionNotFound after the timeout", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const s = setUp();
    const late = reader(s, 2);
    expect(late.getView()).toBeUndefined();
    vi.advanceTimersByTime(9_000);
    s.partition.setup();
    expect(late.getView()).toBeDefined();
    expect(s.queue.failures).toEqual([]);
    late.releaseAllResources();

    const never = new CreditBasedSequenceNumberingViewReader(new InputChannelID(), 2, s.queue);
    const missing = new ResultPartitionID();
    never.requestSubpartitionViewOrRegisterListener(s.manager, missing, 0, 10_000);
    vi.advanceTimersByTime(10_000);
    expect(s.queue.failures).toHaveLength(1);
    const error = s.queue.failures[0] as SluiceError;
    expect(error).toBeInstanceOf(PartitionNotFoundError);
    expect(error.code).toBe(ErrorCodes.PARTITION_NOT_FOUND);
    expect(error.message).toContain(missing.toString());
    expectAllSegmentsBack(s);
  });
});
