import { type LocalBufferPool, NetworkBufferPool, ResultPartitionID } from "@sluice/core";
import { ResultPartitionType } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import "@sluice/core/testing";
import { ResultPartitionManager } from "../partition/result-partition-manager.js";
import { buildPipelinedResultPartition } from "./result-partition-builder.js";

let global: NetworkBufferPool | undefined;

afterEach(() => {
  global?.destroy();
  global = undefined;
});

describe("buildPipelinedResultPartition", () => {
  it("sets up a PIPELINED_BOUNDED partition with one subpartition and a pool of n + 1 guaranteed buffers", () => {
    global = new NetworkBufferPool(16, 64);
    const manager = new ResultPartitionManager();
    const partition = buildPipelinedResultPartition({
      networkBufferPool: global,
      partitionManager: manager,
      maxBuffers: 8,
    });
    expect(partition.owningTaskName).toBe("producer");
    expect(partition.partitionType).toBe(ResultPartitionType.PIPELINED_BOUNDED);
    expect(partition.numberOfSubpartitions).toBe(1);
    const pool = partition.getBufferPool() as LocalBufferPool;
    expect(pool.getNumberOfRequiredMemorySegments()).toBe(2);
    expect(pool.getMaxNumberOfMemorySegments()).toBe(8);
    // Set up means registered: the manager serves its views.
    const view = manager.createSubpartitionView(partition.partitionId, 0, {
      notifyDataAvailable: () => {},
    });
    view.releaseAllResources();
    partition.release();
    expect(global).toHaveAllSegmentsAvailable();
  });

  it("takes what a test gives, and leaves set-up to the test when asked", () => {
    global = new NetworkBufferPool(16, 64);
    const partitionId = new ResultPartitionID();
    const partition = buildPipelinedResultPartition({
      networkBufferPool: global,
      partitionManager: new ResultPartitionManager(),
      numberOfSubpartitions: 3,
      requiredBuffers: 5,
      maxBuffers: 6,
      owningTaskName: "writer",
      partitionId,
      partitionType: ResultPartitionType.PIPELINED,
      setup: false,
    });
    expect(partition.getBufferPool()).toBeUndefined();
    partition.setup();
    expect(partition.partitionId).toBe(partitionId);
    expect(partition.description).toContain("[writer]");
    expect(partition.partitionType).toBe(ResultPartitionType.PIPELINED);
    expect(partition.getBufferPool()?.getNumberOfRequiredMemorySegments()).toBe(5);
    partition.release();
  });
});
