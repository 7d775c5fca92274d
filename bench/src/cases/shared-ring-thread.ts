/**
 * One end of case 13's raw SharedArrayBuffer ring (run as a worker thread by shared-ring-bench.ts):
 * the writer copies chunks into the ring's slots, the reader copies them out, each waiting with
 * the blocking `Atomics.wait` when the ring is full or empty. Neither does I/O, so blocking is
 * the cheapest wait there is: the ring is the ceiling a channel between threads is measured
 * against.
 */
import { parentPort, workerData } from "node:worker_threads";

export interface RingThreadData {
  readonly role: "writer" | "reader";
  /** Header: [written, read, stop]. */
  readonly header: SharedArrayBuffer;
  readonly ring: SharedArrayBuffer;
  readonly slots: number;
  readonly chunkBytes: number;
}

const WRITTEN = 0;
const READ = 1;
const STOP = 2;

const { role, header, ring, slots, chunkBytes } = workerData as RingThreadData;
const positions = new Int32Array(header);
const bytes = new Uint8Array(ring);

if (role === "writer") {
  const source = new Uint8Array(chunkBytes).fill(0x5a);
  let written = 0;
  while (Atomics.load(positions, STOP) === 0) {
    const read = Atomics.load(positions, READ);
    if (written - read === slots) {
      Atomics.wait(positions, READ, read, 50);
      continue;
    }
    source[0] = written & 0xff;
    bytes.set(source, (written % slots) * chunkBytes);
    written++;
    Atomics.store(positions, WRITTEN, written);
    Atomics.notify(positions, WRITTEN);
  }
  parentPort?.postMessage({ written });
} else {
  const sink = new Uint8Array(chunkBytes);
  let read = 0;
  let first = 0;
  let last = 0;
  let checksum = 0;
  while (Atomics.load(positions, STOP) === 0) {
    const written = Atomics.load(positions, WRITTEN);
    if (written === read) {
      Atomics.wait(positions, WRITTEN, written, 50);
      continue;
    }
    const at = (read % slots) * chunkBytes;
    sink.set(bytes.subarray(at, at + chunkBytes));
    checksum += sink[0] as number;
    read++;
    Atomics.store(positions, READ, read);
    Atomics.notify(positions, READ);
    last = performance.now();
    if (read === 1) first = last;
  }
  parentPort?.postMessage({ read, first, last, checksum });
}
