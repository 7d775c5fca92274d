import { NetworkBufferPool } from "@sluice/core";
import { afterEach } from "vitest";

/**
 * Gives each test of the calling file its own NetworkBufferPool: the returned function creates
 * the test's pool, and it is destroyed after the test (so a test that fails midway leaves no pool
 * behind for the next one).
 */
export function networkBufferPoolPerTest(): (
  numberOfSegments: number,
  segmentSize: number,
) => NetworkBufferPool {
  let global: NetworkBufferPool | undefined;
  afterEach(() => {
    global?.destroy();
    global = undefined;
  });
  return (numberOfSegments, segmentSize) => {
    global = new NetworkBufferPool(numberOfSegments, segmentSize);
    return global;
  };
}
