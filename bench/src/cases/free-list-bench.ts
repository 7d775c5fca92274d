/**
 * Case 13's free-list rows, inside one child: what a NetworkBufferPool pays to take a segment and
 * give it back, with the task manager's segments on one thread's array (the single-loop pool) and
 * on the lock-free free list the slot threads share, alone and with a second thread taking and
 * giving at the same time.
 */
import { Worker } from "node:worker_threads";
import { NetworkBufferPool, SharedNetworkMemory } from "@sluice/core";

export interface FreeListRunArgs {
  readonly durationMs: number;
}

/** Nanoseconds per take + give of each free list. */
export interface FreeListResult {
  readonly arrayNs: number;
  readonly sharedNs: number;
  readonly sharedContendedNs: number;
}

const SEGMENTS = 1024;
const SEGMENT_SIZE = 4096;

/** Takes a segment and gives it back, again and again for `durationMs`; ns per take + give. */
function churn(pool: NetworkBufferPool, durationMs: number): number {
  let pairs = 0;
  const start = performance.now();
  const end = start + durationMs;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 1000; i++) {
      // One segment out of the global pool and back, as a LocalBufferPool takes and returns one.
      const segment = pool.requestPooledMemorySegment();
      if (segment !== undefined) {
        pool.recyclePooledMemorySegment(segment);
        pairs++;
      }
    }
    now = performance.now();
  }
  return ((now - start) * 1e6) / Math.max(1, pairs);
}

/** The same churn in a second thread, on its own view of `memory`, until told to stop. */
const CONTENDER = `
  const { parentPort, workerData } = require("node:worker_threads");
  import(workerData.core).then(({ SharedNetworkMemory, NetworkBufferPool }) => {
    const pool = new NetworkBufferPool(SharedNetworkMemory.attach(workerData.handle, 1));
    const stop = new Int32Array(workerData.stop);
    parentPort.postMessage("started");
    while (Atomics.load(stop, 0) === 0) {
      const segment = pool.requestPooledMemorySegment();
      if (segment !== undefined) pool.recyclePooledMemorySegment(segment);
    }
    parentPort.postMessage("stopped");
  });
`;

export async function freeListRun(args: FreeListRunArgs): Promise<FreeListResult> {
  const arrayNs = churn(new NetworkBufferPool(SEGMENTS, SEGMENT_SIZE), args.durationMs);
  const memory = SharedNetworkMemory.create(SEGMENTS, SEGMENT_SIZE, 2);
  const sharedNs = churn(new NetworkBufferPool(memory), args.durationMs);
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const contender = new Worker(CONTENDER, {
    eval: true,
    workerData: {
      core: import.meta.resolve("@sluice/core"),
      handle: memory.handle,
      stop: stop.buffer,
    },
  });
  await new Promise((resolve) => contender.once("message", resolve));
  const sharedContendedNs = churn(new NetworkBufferPool(memory), args.durationMs);
  Atomics.store(stop, 0, 1);
  await new Promise((resolve) => contender.once("message", resolve));
  await contender.terminate();
  return { arrayNs, sharedNs, sharedContendedNs };
}
