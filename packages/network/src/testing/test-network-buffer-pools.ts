import { NetworkBufferPool, SharedNetworkMemory } from "@sluice/core";

/**
 * The NetworkBufferPools of one test file, destroyed together: create them with
 * {@link TestNetworkBufferPools.create} and call {@link TestNetworkBufferPools.destroyAll} in
 * `afterEach`, so a failing test leaves no pool behind for the next one.
 */
export class TestNetworkBufferPools {
  private readonly pools: NetworkBufferPool[] = [];

  /** A new NetworkBufferPool of `numberOfSegments` segments of `segmentSize` bytes. */
  create(numberOfSegments: number, segmentSize: number): NetworkBufferPool {
    const pool = new NetworkBufferPool(numberOfSegments, segmentSize);
    this.pools.push(pool);
    return pool;
  }

  /**
   * A new NetworkBufferPool over a {@link SharedNetworkMemory} of `numberOfSegments` segments of
   * `segmentSize` bytes (one thread's pool, as a slot thread's).
   */
  createShared(numberOfSegments: number, segmentSize: number): NetworkBufferPool {
    const pool = new NetworkBufferPool(
      SharedNetworkMemory.create(numberOfSegments, segmentSize, 1),
    );
    this.pools.push(pool);
    return pool;
  }

  /** Destroys every pool created since the last call. */
  destroyAll(): void {
    for (const pool of this.pools.splice(0)) pool.destroy();
  }
}
