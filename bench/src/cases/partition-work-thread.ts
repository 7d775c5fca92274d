/**
 * Case 13's ceiling for slots on threads: Sluice's per-record work (`partition-work.ts`: the
 * record writer, the partition on shared segments, the deserializer) on one thread, and on two
 * threads at once with nothing between them. Two threads that share nothing can go no faster
 * than this machine's two cores run that work side by side (caches, memory bandwidth, the
 * garbage collectors' helper threads): the keyed job on two slot threads is measured against
 * it. Each thread waits for the others to be ready before it starts, so they run together.
 */
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { type PartitionWorkArgs, partitionWork } from "./partition-work.js";

interface ThreadData {
  readonly work: PartitionWorkArgs;
  /** [ready threads]: a thread starts once all are ready. */
  readonly gate: SharedArrayBuffer;
  readonly threads: number;
}

/** Records per second of `threads` threads each doing `work` at the same time (all records, first start to last end). */
export async function partitionScalingRun(
  threads: number,
  work: PartitionWorkArgs,
): Promise<number> {
  const gate = new SharedArrayBuffer(4);
  const workers = Array.from(
    { length: threads },
    () => new Worker(new URL(import.meta.url), { workerData: { work, gate, threads } }),
  );
  try {
    const spans = await Promise.all(
      workers.map(
        (worker) =>
          new Promise<{ start: number; end: number }>((resolve, reject) => {
            worker.once("message", resolve);
            worker.once("error", reject);
            worker.once("exit", (code) =>
              reject(new Error(`a work thread exited with code ${code}`)),
            );
          }),
      ),
    );
    const start = Math.min(...spans.map((span) => span.start));
    const end = Math.max(...spans.map((span) => span.end));
    return (threads * work.records) / ((end - start) / 1000);
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

if (!isMainThread && parentPort !== null) {
  const { work, gate, threads } = workerData as ThreadData;
  const ready = new Int32Array(gate);
  // A first pass warms this thread's JIT up, so both threads measure compiled code.
  await partitionWork({ ...work, records: Math.min(work.records, 200_000) });
  Atomics.add(ready, 0, 1);
  Atomics.notify(ready, 0);
  while (Atomics.load(ready, 0) < threads) Atomics.wait(ready, 0, Atomics.load(ready, 0), 10);
  const start = performance.timeOrigin + performance.now();
  await partitionWork(work);
  parentPort.postMessage({ start, end: performance.timeOrigin + performance.now() });
}
