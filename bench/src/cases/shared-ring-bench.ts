/**
 * Case 13's baseline for the local channel between slot threads: a raw SharedArrayBuffer ring
 * between two threads of one process (shared-ring-thread.ts), chunks of a segment's size copied
 * in by one thread and out by the other. Payload bytes per second at the reader, first chunk to
 * last. Written here, in bench/: it is what the library is measured against, not part of it.
 */
import { Worker } from "node:worker_threads";
import type { RingThreadData } from "./shared-ring-thread.js";

export interface RingRunArgs {
  readonly durationMs: number;
  readonly chunkBytes: number;
  /** Slots of the ring (its size is slots × chunkBytes). */
  readonly slots: number;
}

const SCRIPT = new URL("./shared-ring-thread.js", import.meta.url);

function start(data: RingThreadData): { worker: Worker; done: Promise<Record<string, number>> } {
  const worker = new Worker(SCRIPT, { workerData: data });
  const done = new Promise<Record<string, number>>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`a ring thread exited with code ${code}`)));
  });
  return { worker, done };
}

/** One run of the ring: bytes per second the reader copied out. */
export async function ringRun(args: RingRunArgs): Promise<{ bytesPerSecond: number }> {
  const header = new SharedArrayBuffer(16);
  const ring = new SharedArrayBuffer(args.slots * args.chunkBytes);
  const common = { header, ring, slots: args.slots, chunkBytes: args.chunkBytes };
  const reader = start({ role: "reader", ...common });
  const writer = start({ role: "writer", ...common });
  await new Promise((resolve) => setTimeout(resolve, args.durationMs));
  const positions = new Int32Array(header);
  Atomics.store(positions, 2, 1);
  Atomics.notify(positions, 0);
  Atomics.notify(positions, 1);
  const [read] = await Promise.all([reader.done, writer.done]);
  await Promise.all([reader.worker.terminate(), writer.worker.terminate()]);
  const { read: chunks = 0, first = 0, last = 0 } = read as Record<string, number>;
  const seconds = (last - first) / 1000;
  return { bytesPerSecond: seconds > 0 ? ((chunks - 1) * args.chunkBytes) / seconds : 0 };
}
