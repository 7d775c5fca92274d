import { BufferPoolDestroyedError, ErrorCodes } from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { TestNetworkBufferPools } from "./test-network-buffer-pools.js";

describe("TestNetworkBufferPools", () => {
  it("destroys every pool it created, once", () => {
    const pools = new TestNetworkBufferPools();
    const first = pools.create(4, 64);
    const second = pools.create(2, 128);
    expect([first.totalNumberOfMemorySegments, second.totalNumberOfMemorySegments]).toEqual([4, 2]);
    pools.destroyAll();
    for (const pool of [first, second]) {
      expectError(
        () => pool.createBufferPool(1, 1),
        BufferPoolDestroyedError,
        ErrorCodes.BUFFER_POOL_DESTROYED,
      );
    }
    // A pool created afterwards belongs to the next round only.
    const third = pools.create(1, 64);
    pools.destroyAll();
    expectError(
      () => third.createBufferPool(1, 1),
      BufferPoolDestroyedError,
      ErrorCodes.BUFFER_POOL_DESTROYED,
    );
  });
});
