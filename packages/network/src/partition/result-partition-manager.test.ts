import {
  CancelledError,
  ErrorCodes,
  frameRecord,
  type NetworkBufferPool,
  PartitionNotFoundError,
  ResultPartitionID,
} from "@sluice/core";
import { expectError, expectSluiceError } from "@sluice/core/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { buildPipelinedResultPartition, TestNetworkBufferPools } from "../testing/index.js";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { PipelinedResultPartition } from "./pipelined-result-partition.js";
import type { PartitionRequestListener } from "./result-partition-manager.js";
import { ResultPartitionManager } from "./result-partition-manager.js";
import type { ResultSubpartitionView } from "./result-subpartition-view.js";

const SEGMENT = 64;

class CountingListener implements BufferAvailabilityListener {
  notifications = 0;
  notifyDataAvailable(): void {
    this.notifications++;
  }
}

class RecordingRequestListener implements PartitionRequestListener {
  readonly views: ResultSubpartitionView[] = [];
  readonly failures: Error[] = [];
  notifyPartitionCreated(view: ResultSubpartitionView): void {
    this.views.push(view);
  }
  notifyPartitionCreateFailed(cause: Error): void {
    this.failures.push(cause);
  }
}

const pools = new TestNetworkBufferPools();

afterEach(() => {
  vi.useRealTimers();
  pools.destroyAll();
});

function newGlobal(): NetworkBufferPool {
  return pools.create(32, SEGMENT);
}

function newPartition(
  global: NetworkBufferPool,
  manager: ResultPartitionManager,
  subpartitions = 1,
): PipelinedResultPartition {
  return buildPipelinedResultPartition({
    networkBufferPool: global,
    partitionManager: manager,
    numberOfSubpartitions: subpartitions,
    maxBuffers: 8,
    setup: false,
  });
}

function expectAllSegmentsBack(global: NetworkBufferPool): void {
  expect(global).toHaveAllSegmentsAvailable();
}

describe("ResultPartitionManager", () => {
  it("fails with PartitionNotFoundError for a partition that is not registered", () => {
    const manager = new ResultPartitionManager();
    const id = new ResultPartitionID();
    const error = expectError(
      () => manager.createSubpartitionView(id, 0, new CountingListener()),
      PartitionNotFoundError,
      ErrorCodes.PARTITION_NOT_FOUND,
    );
    expect(error.message).toContain(id.toString());
  });

  it("creates views of a registered partition and refuses a second view of one subpartition", () => {
    const global = newGlobal();
    const manager = new ResultPartitionManager();
    const partition = newPartition(global, manager, 2);
    partition.setup();
    expect(manager.getUnreleasedPartitions().map(String)).toEqual([String(partition.partitionId)]);
    const view = manager.createSubpartitionView(partition.partitionId, 1, new CountingListener());
    expect(view.isReleased()).toBe(false);
    expect(() =>
      manager.createSubpartitionView(partition.partitionId, 1, new CountingListener()),
    ).toThrow(/already being consumed/);
    manager.shutdown();
    expect(partition.isReleased()).toBe(true);
    expectAllSegmentsBack(global);
  });

  it("hands a request that arrived before registration its view once the partition registers", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const global = newGlobal();
    const manager = new ResultPartitionManager();
    const partition = newPartition(global, manager);
    const listener = new CountingListener();
    const requester = new RecordingRequestListener();
    const immediate = manager.createSubpartitionViewOrRegisterListener(
      partition.partitionId,
      0,
      listener,
      requester,
      10_000,
    );
    expect(immediate).toBeUndefined();
    expect(vi.getTimerCount()).toBe(1);

    vi.advanceTimersByTime(5_000);
    partition.setup(); // registers
    expect(requester.views).toHaveLength(1);
    expect(requester.failures).toEqual([]);
    expect(vi.getTimerCount()).toBe(0); // the timeout was cancelled

    // The view works: data written now reaches the listener.
    partition.emitRecord(frameRecord(new Uint8Array(60)), 0);
    expect(listener.notifications).toBeGreaterThan(0);
    const view = requester.views[0] as ResultSubpartitionView;
    const next = view.getNextBuffer();
    expect(next?.buffer.getSize()).toBe(SEGMENT);
    next?.buffer.recycleBuffer();

    vi.advanceTimersByTime(10_000);
    expect(requester.failures).toEqual([]);
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("fails a waiting request with PartitionNotFoundError once the request timeout passed", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const global = newGlobal();
    const manager = new ResultPartitionManager();
    const partition = newPartition(global, manager);
    const requester = new RecordingRequestListener();
    manager.createSubpartitionViewOrRegisterListener(
      partition.partitionId,
      0,
      new CountingListener(),
      requester,
      10_000,
    );
    vi.advanceTimersByTime(9_999);
    expect(requester.failures).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(requester.failures).toHaveLength(1);
    const error = expectSluiceError(
      requester.failures[0],
      PartitionNotFoundError,
      ErrorCodes.PARTITION_NOT_FOUND,
    );
    expect(error.message).toContain("10000 ms");

    // A registration after the timeout no longer reaches the expired request.
    partition.setup();
    expect(requester.views).toEqual([]);
    partition.release();
    expectAllSegmentsBack(global);
  });

  it("forgets a cancelled waiting request", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const manager = new ResultPartitionManager();
    const id = new ResultPartitionID();
    const requester = new RecordingRequestListener();
    manager.createSubpartitionViewOrRegisterListener(id, 0, new CountingListener(), requester, 100);
    manager.cancelWaitingRequest(id, requester);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1_000);
    expect(requester.failures).toEqual([]);
  });

  it("releases a pipelined partition once every subpartition view was released and its producer closed", () => {
    const global = newGlobal();
    const manager = new ResultPartitionManager();
    const partition = newPartition(global, manager, 3);
    partition.setup();
    const views = [0, 1, 2].map((i) =>
      manager.createSubpartitionView(partition.partitionId, i, new CountingListener()),
    );
    for (let i = 0; i < 3; i++) partition.emitRecord(frameRecord(new Uint8Array(60)), i);
    partition.finish();
    for (const view of views) {
      for (let next = view.getNextBuffer(); next !== undefined; next = view.getNextBuffer()) {
        next.buffer.recycleBuffer();
      }
    }

    (views[0] as ResultSubpartitionView).releaseAllResources();
    (views[2] as ResultSubpartitionView).releaseAllResources();
    expect(partition.isReleased()).toBe(false);
    expect(manager.getUnreleasedPartitions()).toHaveLength(1);
    (views[1] as ResultSubpartitionView).releaseAllResources();
    // Every subpartition was consumed, but the producer is still open: Flink counts it as the
    // (n + 1)-th user, so the partition stays until it closes.
    expect(partition.isReleased()).toBe(false);
    expect(manager.getUnreleasedPartitions()).toHaveLength(1);
    partition.close();
    expect(partition.isReleased()).toBe(true);
    expect(manager.getUnreleasedPartitions()).toEqual([]);
    // A late request learns at once that the partition was consumed (no timeout wait).
    expectError(
      () => manager.createSubpartitionView(partition.partitionId, 0, new CountingListener()),
      CancelledError,
      ErrorCodes.CANCELLED,
    );
    partition.close(); // idempotent: drops the producer's use once
    expectAllSegmentsBack(global);
  });

  it("releases a partition whose every consumer went away before the end of the data, so its producer learns", () => {
    const global = newGlobal();
    const manager = new ResultPartitionManager();
    const partition = newPartition(global, manager, 2);
    partition.setup();
    const views = [0, 1].map((i) =>
      manager.createSubpartitionView(partition.partitionId, i, new CountingListener()),
    );
    partition.emitRecord(frameRecord(new Uint8Array(10)), 0);
    (views[0] as ResultSubpartitionView).releaseAllResources();
    expect(partition.isReleased()).toBe(false); // one consumer is still reading
    (views[1] as ResultSubpartitionView).releaseAllResources();
    expect(partition.isReleased()).toBe(true);
    expectError(
      () => partition.emitRecord(frameRecord(new Uint8Array(10)), 0),
      CancelledError,
      ErrorCodes.CANCELLED,
    );
    partition.close();
    expectAllSegmentsBack(global);
  });

  it("answers a request for a failed partition at once with the producer's error", () => {
    const global = newGlobal();
    const manager = new ResultPartitionManager();
    const partition = newPartition(global, manager, 1);
    partition.setup();
    partition.fail(new Error("disk full"));
    expect(manager.getUnreleasedPartitions()).toEqual([]);
    const listener = { notifyPartitionCreated: vi.fn(), notifyPartitionCreateFailed: vi.fn() };
    let thrown: unknown;
    try {
      manager.createSubpartitionViewOrRegisterListener(
        partition.partitionId,
        0,
        new CountingListener(),
        listener,
        10_000,
      );
    } catch (error) {
      thrown = error;
    }
    expect((thrown as { code?: string }).code).toBe(ErrorCodes.PRODUCER_FAILED);
    expect((thrown as Error).message).toContain("disk full");
    expect(listener.notifyPartitionCreateFailed).not.toHaveBeenCalled();
    partition.close();
    expectAllSegmentsBack(global);
  });

  it("drops the queued data of a subpartition whose reader went away, keeping the others", () => {
    const global = newGlobal();
    const manager = new ResultPartitionManager();
    const partition = newPartition(global, manager, 2);
    partition.setup();
    const gone = manager.createSubpartitionView(partition.partitionId, 0, new CountingListener());
    const stays = manager.createSubpartitionView(partition.partitionId, 1, new CountingListener());
    partition.emitRecord(frameRecord(new Uint8Array(60)), 0);
    partition.emitRecord(frameRecord(new Uint8Array(60)), 0);
    partition.emitRecord(frameRecord(new Uint8Array(60)), 1);
    const pool = partition.getBufferPool();
    expect(pool?.bestEffortGetNumOfUsedBuffers()).toBe(3);
    gone.releaseAllResources();
    // Its two buffers went back to the output pool; the other subpartition's buffer stays.
    expect(pool?.bestEffortGetNumOfUsedBuffers()).toBe(1);
    expect(pool?.getNumberOfBuffersOfChannel(0)).toBe(0);
    expect(partition.isReleased()).toBe(false);
    const next = stays.getNextBuffer();
    expect(next?.buffer.getSize()).toBe(SEGMENT);
    next?.buffer.recycleBuffer();
    stays.releaseAllResources();
    expect(partition.isReleased()).toBe(true);
    expectAllSegmentsBack(global);
  });

  it("unregisters a failed partition", () => {
    const global = newGlobal();
    const manager = new ResultPartitionManager();
    const partition = newPartition(global, manager);
    partition.setup();
    partition.fail(new Error("boom"));
    expect(manager.getUnreleasedPartitions()).toEqual([]);
    expectAllSegmentsBack(global);
  });

  it("fails waiting requests and releases registered partitions on shutdown", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const global = newGlobal();
    const manager = new ResultPartitionManager();
    const registered = newPartition(global, manager);
    registered.setup();
    registered.emitRecord(frameRecord(new Uint8Array(10)), 0);
    const requester = new RecordingRequestListener();
    const missing = new ResultPartitionID();
    manager.createSubpartitionViewOrRegisterListener(
      missing,
      0,
      new CountingListener(),
      requester,
      10_000,
    );
    manager.shutdown();
    expect(requester.failures).toHaveLength(1);
    const error = expectSluiceError(requester.failures[0], CancelledError, ErrorCodes.CANCELLED);
    expect(error.message).toContain(missing.toString());
    expect(vi.getTimerCount()).toBe(0);
    expect(registered.isReleased()).toBe(true);
    expect(manager.getUnreleasedPartitions()).toEqual([]);
    manager.shutdown(); // idempotent
    expect(requester.failures).toHaveLength(1);
    expectError(() => newPartition(global, manager).setup(), CancelledError, ErrorCodes.CANCELLED);
    expectAllSegmentsBack(global);
  });
});
