import { afterEach, expect } from "vitest";
import { must } from "../../testing/index.js";
import type { LocalBufferPool } from "../local-buffer-pool.js";
import type { NetworkBuffer } from "../network-buffer.js";
import { NetworkBufferPool } from "../network-buffer-pool.js";

/** Passes `max` to a LocalBufferPool that may grow without bound. */
export const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/**
 * Returns a factory of NetworkBufferPools (64-byte segments by default) and registers an
 * afterEach that destroys each of them and checks that every segment came back.
 */
export function leakCheckedPools(): (segments: number, segmentSize?: number) => NetworkBufferPool {
  const created: NetworkBufferPool[] = [];
  afterEach(() => {
    for (const pool of created.splice(0)) {
      pool.destroy();
      expect(pool).toHaveAllSegmentsAvailable();
    }
  });
  return (segments, segmentSize = 64) => {
    const pool = new NetworkBufferPool(segments, segmentSize);
    created.push(pool);
    return pool;
  };
}

/** Requests `count` buffers, each of which the pool must have. */
export function requestAll(pool: LocalBufferPool, count: number): NetworkBuffer[] {
  const buffers: NetworkBuffer[] = [];
  for (let i = 0; i < count; i++) buffers.push(must(pool.requestBuffer()));
  return buffers;
}

/** Recycles and forgets every buffer of `buffers`. */
export function recycleAll(buffers: NetworkBuffer[]): void {
  for (const buffer of buffers.splice(0)) buffer.recycleBuffer();
}
