import {
  CancelCheckpointMarker,
  CancelledError,
  CheckpointAlignment,
  CheckpointBarrier,
  DataType,
  DEFAULT_CHECKPOINT_OPTIONS,
  EndOfData,
  EndOfPartitionEvent,
  ErrorCodes,
  EventSerializer,
  frameRecord,
  IllegalStateError,
  type NetworkBuffer,
  type NetworkBufferPool,
} from "@sluice/core";
import { expectError, must, waitFor } from "@sluice/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { RecordingChannelStateWriter } from "../test-support/recording-channel-state-writer.js";
import { buildPipelinedResultPartition, TestNetworkBufferPools } from "../testing/index.js";
import type { BufferAndBacklog } from "./buffer-and-backlog.js";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { PipelinedResultPartition } from "./pipelined-result-partition.js";
import { ResultPartitionManager } from "./result-partition-manager.js";
import type { ResultSubpartitionView } from "./result-subpartition-view.js";

/** Segments are 64 bytes: a record of 60 payload bytes (+ 4-byte length) fills one exactly. */
const SEGMENT = 64;

class RecordingListener implements BufferAvailabilityListener {
  notifications = 0;
  readonly priorityEvents: number[] = [];
  notifyDataAvailable(): void {
    this.notifications++;
  }
  notifyPriorityEvent(prioritySequenceNumber: number): void {
    this.priorityEvents.push(prioritySequenceNumber);
  }
}

interface Harness {
  readonly global: NetworkBufferPool;
  readonly manager: ResultPartitionManager;
  readonly partition: PipelinedResultPartition;
  readonly listener: RecordingListener;
  readonly view: ResultSubpartitionView;
}

const pools = new TestNetworkBufferPools();

afterEach(() => {
  pools.destroyAll();
});

function setUp(
  subpartitions = 1,
  initialSequenceNumber?: number,
  listener = new RecordingListener(),
): Harness {
  const global = pools.create(64, SEGMENT);
  const manager = new ResultPartitionManager();
  const partition = buildPipelinedResultPartition({
    networkBufferPool: global,
    partitionManager: manager,
    numberOfSubpartitions: subpartitions,
    maxBuffers: 32,
    ...(initialSequenceNumber === undefined ? {} : { initialSequenceNumber }),
  });
  const view = manager.createSubpartitionView(partition.partitionId, 0, listener);
  return { global, manager, partition, listener, view };
}

function record(length: number, seed = length): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (seed + i) & 0xff;
  return bytes;
}

/** Takes everything the view hands out now. The caller recycles the buffers. */
function drain(view: ResultSubpartitionView): BufferAndBacklog[] {
  const out: BufferAndBacklog[] = [];
  for (let next = view.getNextBuffer(); next !== undefined; next = view.getNextBuffer()) {
    out.push(next);
  }
  return out;
}

function recycleAll(items: readonly BufferAndBacklog[]): void {
  for (const item of items) item.buffer.recycleBuffer();
}

function eventOf(buffer: NetworkBuffer): unknown {
  return EventSerializer.fromBuffer(buffer);
}

function expectAllSegmentsBack(global: NetworkBufferPool): void {
  expect(global).toHaveAllSegmentsAvailable();
}

describe("PipelinedSubpartition notifications", () => {
  it("does not notify the reader for a single unfinished buffer, however much it holds", () => {
    const { global, partition, listener, view } = setUp();
    partition.emitRecord(frameRecord(record(10)), 0);
    partition.emitRecord(frameRecord(record(20)), 0);
    expect(listener.notifications).toBe(0);
    expect(view.getAvailabilityAndBacklog(1)).toEqual({ isAvailable: false, backlog: 0 });
    expect(partition.getSubpartition(0).getNumberOfQueuedBuffers()).toBe(1);
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("notifies the reader as soon as the first finished buffer is queued", () => {
    const { global, partition, listener, view } = setUp();
    // 4 × 14 bytes = 56 bytes: still one unfinished buffer.
    for (let i = 0; i < 4; i++) partition.emitRecord(frameRecord(record(10, i)), 0);
    expect(listener.notifications).toBe(0);
    // The fifth record spills into a second buffer: the first one is finished.
    partition.emitRecord(frameRecord(record(10, 4)), 0);
    expect(listener.notifications).toBeGreaterThan(0);
    expect(view.getAvailabilityAndBacklog(1)).toEqual({ isAvailable: true, backlog: 1 });

    const first = must(view.getNextBuffer());
    expect(first.buffer.getSize()).toBe(SEGMENT);
    expect(first.buffersInBacklog).toBe(0);
    // The remaining buffer is unfinished and not flushed: nothing more to read for now.
    expect(first.nextDataType).toBe(DataType.NONE);
    first.buffer.recycleBuffer();
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("notifies when a record fills a buffer exactly, without waiting for the next record", () => {
    const { global, partition, listener, view } = setUp();
    partition.emitRecord(frameRecord(record(SEGMENT - 4)), 0);
    expect(listener.notifications).toBeGreaterThan(0);
    const items = drain(view);
    expect(items.map((i) => i.buffer.getSize())).toEqual([SEGMENT]);
    recycleAll(items);
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("notifies on flush only when the unfinished buffer holds data, and only once until drained", () => {
    const { global, partition, listener, view } = setUp();
    partition.flushAll(); // empty subpartition
    expect(listener.notifications).toBe(0);

    partition.emitRecord(frameRecord(record(10)), 0);
    partition.flush(0);
    expect(listener.notifications).toBe(1);
    expect(view.getAvailabilityAndBacklog(1)).toEqual({ isAvailable: true, backlog: 1 });

    // More flushes and more data before the reader drained: no further notification.
    partition.flush(0);
    partition.emitRecord(frameRecord(record(10, 1)), 0);
    partition.flushAll();
    expect(listener.notifications).toBe(1);

    const items = drain(view);
    expect(items.map((i) => i.buffer.getSize())).toEqual([28]);
    expect(items[0]?.nextDataType).toBe(DataType.NONE);
    recycleAll(items);

    // The unfinished buffer is still queued but everything in it was read: flush stays silent.
    expect(partition.getSubpartition(0).getNumberOfQueuedBuffers()).toBe(1);
    partition.flush(0);
    expect(listener.notifications).toBe(1);
    expect(view.getAvailabilityAndBacklog(1).isAvailable).toBe(false);

    // New data after the drain: the next flush notifies again.
    partition.emitRecord(frameRecord(record(10, 2)), 0);
    partition.flush(0);
    expect(listener.notifications).toBe(2);
    const rest = drain(view);
    expect(rest.map((i) => i.buffer.getSize())).toEqual([14]);
    recycleAll(rest);
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("notifies a reader that attaches after flushed data was queued", () => {
    const global = pools.create(16, SEGMENT);
    const manager = new ResultPartitionManager();
    const partition = buildPipelinedResultPartition({
      networkBufferPool: global,
      partitionManager: manager,
      maxBuffers: 8,
    });
    partition.emitRecord(frameRecord(record(10)), 0);
    partition.flushAll();
    const listener = new RecordingListener();
    const view = manager.createSubpartitionView(partition.partitionId, 0, listener);
    expect(listener.notifications).toBe(1);
    recycleAll(drain(view));
    partition.release();
    expectAllSegmentsBack(global);
  });
});

describe("PipelinedSubpartition backlog", () => {
  it("counts finished data buffers only; the unfinished one once flushed", () => {
    const { global, partition, view } = setUp();
    partition.emitRecord(frameRecord(record(SEGMENT - 4, 1)), 0); // buffer 1, finished
    partition.emitRecord(frameRecord(record(SEGMENT - 4, 2)), 0); // buffer 2, finished
    partition.emitRecord(frameRecord(record(10, 3)), 0); // buffer 3, unfinished
    expect(view.getAvailabilityAndBacklog(1).backlog).toBe(2);
    expect(view.getAvailabilityAndBacklog(0).backlog).toBe(2);

    partition.flush(0);
    expect(view.getAvailabilityAndBacklog(1).backlog).toBe(3);

    const items = drain(view);
    expect(items.map((i) => i.buffersInBacklog)).toEqual([2, 1, 0]);
    expect(items.map((i) => i.sequenceNumber)).toEqual([0, 1, 2]);
    recycleAll(items);
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("counts a last buffer that a record filled exactly: it is finished, not open", () => {
    const { global, partition, listener, view } = setUp();
    for (let i = 0; i < 3; i++) partition.emitRecord(frameRecord(record(SEGMENT - 4, i)), 0);
    // No open buffer follows: all three are finished and waiting.
    expect(partition.getSubpartition(0).getNumberOfQueuedBuffers()).toBe(3);
    expect(view.getAvailabilityAndBacklog(0)).toEqual({ isAvailable: false, backlog: 3 });
    expect(listener.notifications).toBeGreaterThan(0);
    const items = drain(view);
    expect(items.map((i) => i.buffersInBacklog)).toEqual([2, 1, 0]);
    recycleAll(items);
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("excludes events from the backlog", () => {
    const { global, partition, view } = setUp();
    partition.emitRecord(frameRecord(record(SEGMENT - 4, 1)), 0);
    partition.emitRecord(frameRecord(record(10, 2)), 0);
    // An event finishes the open buffer and is queued after it.
    partition.broadcastEvent(new EndOfData());
    expect(view.getAvailabilityAndBacklog(1).backlog).toBe(2);
    partition.broadcastEvent(new CancelCheckpointMarker(7n));
    expect(view.getAvailabilityAndBacklog(1).backlog).toBe(2);

    const items = drain(view);
    expect(items.map((i) => i.buffer.isBuffer())).toEqual([true, true, false, false]);
    expect(items.map((i) => i.buffersInBacklog)).toEqual([1, 0, 0, 0]);
    expect(items.map((i) => i.nextDataType)).toEqual([
      DataType.DATA_BUFFER,
      DataType.END_OF_DATA,
      DataType.EVENT_BUFFER,
      DataType.NONE,
    ]);
    recycleAll(items);
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("counts the last unfinished buffer once the subpartition is finished", () => {
    const { global, partition, view } = setUp();
    partition.emitRecord(frameRecord(record(SEGMENT - 4, 1)), 0);
    partition.emitRecord(frameRecord(record(10, 2)), 0);
    expect(view.getAvailabilityAndBacklog(1).backlog).toBe(1);
    partition.finish();
    expect(view.getAvailabilityAndBacklog(1).backlog).toBe(2);
    const items = drain(view);
    expect(items.map((i) => i.buffersInBacklog)).toEqual([1, 0, 0]);
    expect(eventOf(must(items[2]).buffer)).toBe(EndOfPartitionEvent.INSTANCE);
    recycleAll(items);
    partition.release();
    expectAllSegmentsBack(global);
  });
});

describe("PipelinedSubpartition priority events", () => {
  it("puts priority events at the head, ahead of queued data, in order among themselves, and notifies the first", () => {
    const { global, partition, listener, view } = setUp();
    partition.emitRecord(frameRecord(record(SEGMENT - 4, 1)), 0);
    partition.emitRecord(frameRecord(record(10, 2)), 0);
    const before = listener.notifications;
    partition.broadcastEvent(new CancelCheckpointMarker(1n), true);
    partition.broadcastEvent(new CancelCheckpointMarker(2n), true);
    // As in Flink, only the first pending priority event is announced: the reader takes both.
    expect(listener.priorityEvents).toEqual([0]);
    expect(listener.notifications).toBeGreaterThan(before);

    const items = drain(view);
    expect(items.map((i) => i.buffer.getDataType())).toEqual([
      DataType.PRIORITIZED_EVENT_BUFFER,
      DataType.PRIORITIZED_EVENT_BUFFER,
      DataType.DATA_BUFFER,
      DataType.DATA_BUFFER,
    ]);
    expect((eventOf(must(items[0]).buffer) as CancelCheckpointMarker).checkpointId).toBe(1n);
    expect((eventOf(must(items[1]).buffer) as CancelCheckpointMarker).checkpointId).toBe(2n);
    expect(items.map((i) => i.sequenceNumber)).toEqual([0, 1, 2, 3]);
    recycleAll(items);
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("notifies a priority event even when only an unfinished buffer is queued", () => {
    const { global, partition, listener, view } = setUp();
    partition.emitRecord(frameRecord(record(10)), 0);
    expect(listener.notifications).toBe(0);
    partition.broadcastEvent(new CancelCheckpointMarker(3n), true);
    expect(listener.notifications).toBeGreaterThan(0);
    expect(listener.priorityEvents).toEqual([0]);
    const first = must(view.getNextBuffer());
    expect(first.buffer.getDataType()).toBe(DataType.PRIORITIZED_EVENT_BUFFER);
    first.buffer.recycleBuffer();
    recycleAll(drain(view));
    partition.release();
    expectAllSegmentsBack(global);
  });
});

/** Queues an aligned barrier and a full buffer, and lets the reader take the barrier. */
function blockWithAlignedBarrier(
  partition: PipelinedResultPartition,
  view: ResultSubpartitionView,
): void {
  partition.broadcastEvent(new CheckpointBarrier(1n, 0n));
  partition.emitRecord(frameRecord(record(SEGMENT - 4)), 0);
  const barrier = must(view.getNextBuffer());
  expect(barrier.buffer.getDataType()).toBe(DataType.ALIGNED_CHECKPOINT_BARRIER);
  barrier.buffer.recycleBuffer();
}

describe("PipelinedSubpartition blocking", () => {
  it("blocks after an aligned barrier (no data, backlog 0) until consumption resumes", () => {
    const { global, partition, listener, view } = setUp();
    blockWithAlignedBarrier(partition, view);
    expect(view.getNextBuffer()).toBeUndefined();
    expect(view.getAvailabilityAndBacklog(1)).toEqual({ isAvailable: false, backlog: 0 });

    const before = listener.notifications;
    view.resumeConsumption();
    expect(listener.notifications).toBe(before + 1);
    const items = drain(view);
    expect(items.map((i) => i.buffer.getSize())).toEqual([SEGMENT]);
    recycleAll(items);
    partition.release();
    expectAllSegmentsBack(global);
  });
});

describe("PipelinedSubpartition priority events while blocked", () => {
  it("announces no priority event while blocked by an aligned barrier, and hands it out first once resumed", () => {
    const { global, partition, listener, view } = setUp();
    blockWithAlignedBarrier(partition, view);
    const notifications = listener.notifications;
    // An unaligned barrier of a later checkpoint reaches the blocked subpartition.
    partition.broadcastEvent(
      new CheckpointBarrier(2n, 0n, {
        ...DEFAULT_CHECKPOINT_OPTIONS,
        alignment: CheckpointAlignment.UNALIGNED,
      }),
      true,
    );
    expect(listener.priorityEvents).toEqual([]);
    expect(listener.notifications).toBe(notifications);
    expect(view.getNextBuffer()).toBeUndefined();

    view.resumeConsumption();
    expect(listener.notifications).toBe(notifications + 1);
    const items = drain(view);
    expect(items.map((i) => i.buffer.getDataType())).toEqual([
      DataType.PRIORITIZED_EVENT_BUFFER,
      DataType.DATA_BUFFER,
    ]);
    expect((eventOf(must(items[0]).buffer) as CheckpointBarrier).id).toBe(2n);
    recycleAll(items);
    // Unblocked, the next priority event is announced again.
    partition.broadcastEvent(new CancelCheckpointMarker(2n), true);
    expect(listener.priorityEvents).toEqual([3]);
    recycleAll(drain(view));
    partition.release();
    expectAllSegmentsBack(global);
  });
});

describe("PipelinedSubpartition sequence numbers", () => {
  it("wraps from 2^31 - 1 to -2^31 and counts on, as Flink's int does", () => {
    const { global, partition, view } = setUp(1, 2 ** 31 - 2);
    for (let i = 0; i < 4; i++) partition.emitRecord(frameRecord(record(SEGMENT - 4, i)), 0);
    partition.flushAll();
    const items = drain(view);
    expect(items.map((i) => i.sequenceNumber)).toEqual([
      2 ** 31 - 2,
      2 ** 31 - 1,
      -(2 ** 31),
      -(2 ** 31) + 1,
    ]);
    recycleAll(items);
    partition.release();
    expectAllSegmentsBack(global);
  });
});

describe("PipelinedSubpartition finish and release", () => {
  it("accepts nothing after finish", () => {
    const { global, partition, view } = setUp();
    partition.emitRecord(frameRecord(record(10)), 0);
    partition.finish();
    expect(partition.isFinished()).toBe(true);
    expectError(
      () => partition.emitRecord(frameRecord(record(10)), 0),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
    expectError(
      () => partition.broadcastRecord(frameRecord(record(10))),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
    expectError(
      () => partition.broadcastEvent(new EndOfData()),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
    expectError(() => partition.finish(), IllegalStateError, ErrorCodes.ILLEGAL_STATE);

    // The subpartition itself refuses (and closes) a consumer added after finish.
    const pool = must(partition.getBufferPool());
    const used = pool.bestEffortGetNumOfUsedBuffers();
    const builder = must(pool.requestBufferBuilder(0));
    const subpartition = partition.getSubpartition(0);
    const queued = subpartition.getNumberOfQueuedBuffers();
    expect(subpartition.add(builder.createBufferConsumerFromBeginning())).toBe(false);
    builder.close();
    expect(subpartition.getNumberOfQueuedBuffers()).toBe(queued);
    expect(pool.bestEffortGetNumOfUsedBuffers()).toBe(used);

    const items = drain(view);
    expect(items).toHaveLength(2);
    expect(eventOf(must(items[1]).buffer)).toBe(EndOfPartitionEvent.INSTANCE);
    recycleAll(items);
    partition.close();
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("recycles every queued buffer on release and the view reports the release with its cause", () => {
    const { global, partition, listener, view } = setUp(2);
    for (let i = 0; i < 5; i++) partition.emitRecord(frameRecord(record(SEGMENT - 4, i)), i % 2);
    partition.emitRecord(frameRecord(record(10)), 0);
    const held = must(view.getNextBuffer());
    expect(global.getNumberOfUsedMemorySegments()).toBe(6);

    const cause = new Error("task failed");
    const before = listener.notifications;
    partition.release(cause);
    expect(listener.notifications).toBeGreaterThan(before);
    expect(view.isReleased()).toBe(true);
    expect(view.getFailureCause()).toBe(cause);
    expect(view.getNextBuffer()).toBeUndefined();
    // Everything but the buffer the reader still holds is back.
    expect(global.getNumberOfUsedMemorySegments()).toBe(1);
    held.buffer.recycleBuffer();
    expectAllSegmentsBack(global);

    const error = expectError(
      () => partition.emitRecord(frameRecord(record(1)), 0),
      CancelledError,
      ErrorCodes.CANCELLED,
    );
    expect(error.cause).toBe(cause);
    partition.release(); // idempotent
    expectAllSegmentsBack(global);
  });
});

describe("PipelinedSubpartition unaligned barriers (output channel state)", () => {
  const unaligned = new CheckpointBarrier(4n, 0n, {
    ...DEFAULT_CHECKPOINT_OPTIONS,
    alignment: CheckpointAlignment.UNALIGNED,
  });

  it("hands the data an unaligned barrier overtakes to the writer, without bytes already read", () => {
    const h = setUp();
    const writer = new RecordingChannelStateWriter();
    h.partition.setChannelStateWriter(writer);
    const first = new Uint8Array(60).fill(1);
    const second = new Uint8Array(20).fill(2);
    h.partition.emitRecord(frameRecord(first), 0);
    h.partition.emitRecord(frameRecord(second), 0);
    expect(h.partition.getNumberOfQueuedBytes()).toBe(64 + 24);
    // The reader already took the first buffer: only the second is in flight.
    must(h.view.getNextBuffer()).buffer.recycleBuffer();
    expect(h.partition.getNumberOfQueuedBytes()).toBe(24);
    h.partition.broadcastEvent(unaligned, true);
    expect(writer.calls).toHaveLength(1);
    expect(writer.calls[0]).toMatchObject({ checkpointId: 4n, kind: "output", channel: "0:0" });
    const expected = [0, 0, 0, 20, ...second];
    expect(writer.bytes(4n, "output")).toEqual(expected);
    // The barrier is next, then the overtaken data, which the consumer still gets.
    const barrier = must(h.view.getNextBuffer());
    expect(barrier.buffer.getDataType()).toBe(DataType.PRIORITIZED_EVENT_BUFFER);
    barrier.buffer.recycleBuffer();
    const data = must(h.view.getNextBuffer());
    expect([...data.buffer.readableView()]).toEqual(expected);
    data.buffer.recycleBuffer();
    h.partition.release();
    h.partition.close();
    expect(h.global).toHaveAllSegmentsAvailable();
  });

  it("hands nothing over for an aligned barrier or without a writer", () => {
    const h = setUp();
    const writer = new RecordingChannelStateWriter();
    h.partition.emitRecord(frameRecord(new Uint8Array(8)), 0);
    h.partition.broadcastEvent(unaligned, true);
    h.partition.setChannelStateWriter(writer);
    h.partition.emitRecord(frameRecord(new Uint8Array(8)), 0);
    h.partition.broadcastEvent(new CheckpointBarrier(5n, 0n));
    expect(writer.calls).toEqual([]);
    h.partition.release();
    h.partition.close();
    expect(h.global).toHaveAllSegmentsAvailable();
  });
});

describe("PipelinedSubpartition timeoutable aligned barriers (output-side alignment timeout)", () => {
  /** A remote reader with `initialCredit` exclusive buffers (0: it grants none, credit-starved). */
  class RemoteReader extends RecordingListener {
    constructor(readonly initialCredit: number) {
      super();
    }
  }

  /** A timeoutable aligned barrier of `id` created now, timing out `timeoutMs` later. */
  function timeoutable(id: bigint, timeoutMs: number): CheckpointBarrier {
    return new CheckpointBarrier(id, BigInt(Date.now()), {
      ...DEFAULT_CHECKPOINT_OPTIONS,
      alignedCheckpointTimeout: BigInt(timeoutMs),
    });
  }

  /** Queues `n` full data buffers (one 60-byte record each) in subpartition 0. */
  function fill(partition: PipelinedResultPartition, n: number): number[][] {
    const payloads: number[][] = [];
    for (let i = 0; i < n; i++) {
      const framed = frameRecord(record(SEGMENT - 4, i * 7));
      partition.emitRecord(framed, 0);
      payloads.push([...framed]);
    }
    return payloads;
  }

  it("testConsumeTimeoutableCheckpointBarrierQuickly: a barrier sent before its timeout stays aligned, overtakes nothing and leaves no timer", async () => {
    const h = setUp(1, undefined, new RemoteReader(2));
    const writer = new RecordingChannelStateWriter();
    h.partition.setChannelStateWriter(writer);
    for (const [n, id] of [
      [0, 5n],
      [2, 6n],
    ] as const) {
      fill(h.partition, n);
      h.partition.broadcastEvent(timeoutable(id, 60_000));
      expect(h.partition.getPendingAlignmentTimeouts()).toEqual([id]);
      const taken = drain(h.view);
      expect(taken.map((item) => item.buffer.getDataType())).toEqual([
        ...Array<DataType>(n).fill(DataType.DATA_BUFFER),
        DataType.TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER,
      ]);
      recycleAll(taken);
      expect(h.partition.getPendingAlignmentTimeouts()).toEqual([]);
      h.view.resumeConsumption();
    }
    await waitFor(() => writer.futures.every((future) => future.settled), {
      what: "the futures settle",
      timeoutMs: 20_000,
    });
    expect(writer.futures.map((future) => future.checkpointId)).toEqual([5n, 6n]);
    expect(writer.futures.every((future) => future.error === undefined)).toBe(true);
    expect(writer.bytes(5n, "output")).toEqual([]);
    expect(writer.bytes(6n, "output")).toEqual([]);
    h.partition.release();
    h.partition.close();
    expect(h.global).toHaveAllSegmentsAvailable();
  });

  it("testTimeoutAlignedToUnalignedBarrier: a barrier stuck behind N buffers without credit turns unaligned at the timeout, is delivered first, and the buffers it overtook are its output state", async () => {
    const reader = new RemoteReader(0);
    const h = setUp(1, undefined, reader);
    const writer = new RecordingChannelStateWriter();
    h.partition.setChannelStateWriter(writer);
    const payloads = fill(h.partition, 3);
    h.partition.broadcastEvent(timeoutable(8n, 30));
    // Without credit only an event at the head could be sent: the barrier waits behind data.
    expect(h.view.getAvailabilityAndBacklog(0).isAvailable).toBe(false);
    await waitFor(() => h.partition.getPendingAlignmentTimeouts().length === 0, {
      what: "the timer fires",
      timeoutMs: 20_000,
    });
    expect(reader.priorityEvents).toHaveLength(1);
    expect(h.view.getAvailabilityAndBacklog(0)).toEqual({ isAvailable: true, backlog: 3 });
    const taken = drain(h.view);
    expect(taken.map((item) => item.buffer.getDataType())).toEqual([
      DataType.PRIORITIZED_EVENT_BUFFER,
      DataType.DATA_BUFFER,
      DataType.DATA_BUFFER,
      DataType.DATA_BUFFER,
    ]);
    const barrier = EventSerializer.fromBuffer(must(taken[0]).buffer);
    expect(barrier).toMatchObject({ kind: "CheckpointBarrier", id: 8n });
    expect((barrier as CheckpointBarrier).options.alignment).toBe(CheckpointAlignment.UNALIGNED);
    // The overtaken buffers still reach the consumer, in their order...
    expect(taken.slice(1).map((item) => [...item.buffer.readableView()])).toEqual(payloads);
    recycleAll(taken);
    // ...and are the subpartition's output channel state of the checkpoint.
    await waitFor(() => must(writer.futures[0]).settled, {
      what: "the output future settles",
      timeoutMs: 20_000,
    });
    expect(must(writer.futures[0]).channel).toBe("0:0");
    expect(writer.bytes(8n, "output")).toEqual(payloads.flat());
    h.partition.release();
    h.partition.close();
    expect(h.global).toHaveAllSegmentsAvailable();
  });

  it("a cancellation marker stops the timer: the barrier stays aligned and its output is empty", async () => {
    const h = setUp(1, undefined, new RemoteReader(0));
    const writer = new RecordingChannelStateWriter();
    h.partition.setChannelStateWriter(writer);
    fill(h.partition, 2);
    h.partition.broadcastEvent(timeoutable(9n, 60_000));
    h.partition.broadcastEvent(new CancelCheckpointMarker(9n));
    expect(h.partition.getPendingAlignmentTimeouts()).toEqual([]);
    await waitFor(() => must(writer.futures[0]).settled, {
      what: "the output future settles",
      timeoutMs: 20_000,
    });
    expect(writer.bytes(9n, "output")).toEqual([]);
    expect(drain(h.view).map((item) => DataType[item.buffer.getDataType()])).toEqual([
      "DATA_BUFFER",
      "DATA_BUFFER",
      "TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER",
    ]);
    h.partition.release();
    h.partition.close();
  });

  it("leaves no timer after release and fails the pending output with CancelledError", async () => {
    const h = setUp(2);
    const writer = new RecordingChannelStateWriter();
    h.partition.setChannelStateWriter(writer);
    fill(h.partition, 2);
    h.partition.broadcastEvent(timeoutable(10n, 60_000));
    expect(h.partition.getPendingAlignmentTimeouts()).toEqual([10n]);
    h.partition.release();
    expect(h.partition.getPendingAlignmentTimeouts()).toEqual([]);
    await waitFor(() => writer.futures.every((future) => future.settled), {
      what: "the futures settle",
      timeoutMs: 20_000,
    });
    expect(writer.futures).toHaveLength(2);
    for (const future of writer.futures) expect(future.error).toBeInstanceOf(CancelledError);
    h.partition.close();
    expect(h.global).toHaveAllSegmentsAvailable();
  });
});

describe("an empty finished buffer", () => {
  /** A reader that is a remote channel with `initialCredit` exclusive buffers. */
  class RemoteReader extends RecordingListener {
    constructor(readonly initialCredit: number) {
      super();
    }
  }

  /** Polls what is there: the data types and sizes, in order. */
  function drain(view: ResultSubpartitionView): string[] {
    const seen: string[] = [];
    for (let next = view.getNextBuffer(); next !== undefined; next = view.getNextBuffer()) {
      seen.push(`${DataType[next.buffer.getDataType()]}:${next.buffer.getSize()}`);
      next.buffer.recycleBuffer();
    }
    return seen;
  }

  /** Writes a partial record, lets the reader take it (a flush), then finishes the buffer. */
  function emptyFinishedBuffer(reader: RecordingListener): ResultSubpartitionView {
    const { partition, view } = setUp(1, undefined, reader);
    partition.emitRecord(frameRecord(record(20)), 0);
    partition.flushAll();
    expect(drain(view)).toEqual(["DATA_BUFFER:24"]);
    // The buffer's bytes were all taken; finishing it leaves an empty finished buffer queued
    // ahead of the event, counted in the backlog the reader was told.
    partition.broadcastEvent(new CancelCheckpointMarker(1n));
    return view;
  }

  it("is sent to a reader without exclusive buffers, so it can give back the credit it granted", () => {
    const view = emptyFinishedBuffer(new RemoteReader(0));
    expect(drain(view)).toEqual(["DATA_BUFFER:0", "EVENT_BUFFER:12"]);
  });

  it("is dropped for readers with exclusive buffers and local readers", () => {
    expect(drain(emptyFinishedBuffer(new RemoteReader(2)))).toEqual(["EVENT_BUFFER:12"]);
    expect(drain(emptyFinishedBuffer(new RecordingListener()))).toEqual(["EVENT_BUFFER:12"]);
  });
});
