/**
 * Case 13's wake-up rows, inside one child: what it costs one thread to wake another that waits,
 * measured as a ping-pong between two threads that hand a turn back and forth. With the blocking
 * `Atomics.wait` (as the raw ring's threads wait), the woken thread runs straight out of the
 * futex; with `Atomics.waitAsync` (as a slot thread waits, keeping its event loop running for its
 * I/O), the wake-up is a task posted to the waiting thread's event loop, which then resolves a
 * promise. The local channel between slot threads pays the second whenever a side that waits is
 * woken: its reader when the queue ran empty, its writer when its buffers ran out.
 */
import { Worker } from "node:worker_threads";

export type WakeUpMode = "Atomics.wait" | "Atomics.waitAsync";

export interface WakeUpRunArgs {
  readonly mode: WakeUpMode;
  readonly durationMs: number;
}

/** Words of the shared state: whose turn it is (0 or 1), and the stop flag. */
const TURN = 0;
const STOP = 1;

/**
 * One side of the ping-pong: on its turn it passes the turn to the other side and wakes it; off
 * its turn it waits. Reports how many turns it passed.
 */
const SIDE = `
  const { parentPort, workerData } = require("node:worker_threads");
  const { state, side, mode } = workerData;
  const words = new Int32Array(state);
  let passes = 0;
  const pass = () => {
    passes++;
    Atomics.store(words, ${TURN}, 1 - side);
    Atomics.notify(words, ${TURN});
  };
  if (mode === "Atomics.wait") {
    while (Atomics.load(words, ${STOP}) === 0) {
      const turn = Atomics.load(words, ${TURN});
      if (turn === side) pass();
      else Atomics.wait(words, ${TURN}, turn, 50);
    }
    parentPort.postMessage(passes);
  } else {
    // A pending waitAsync does not keep a thread's event loop alive; a timer does.
    const alive = setInterval(() => {}, 1000);
    const loop = () => {
      while (Atomics.load(words, ${STOP}) === 0) {
        const turn = Atomics.load(words, ${TURN});
        if (turn === side) {
          pass();
          continue;
        }
        const wait = Atomics.waitAsync(words, ${TURN}, turn, 50);
        if (wait.async) {
          wait.value.then(loop);
          return;
        }
      }
      clearInterval(alive);
      parentPort.postMessage(passes);
    };
    loop();
  }
`;

/** Microseconds from one thread's notify until the other thread runs, averaged over a run. */
export async function wakeUpRun(args: WakeUpRunArgs): Promise<number> {
  const state = new SharedArrayBuffer(8);
  const words = new Int32Array(state);
  const sides = [0, 1].map(
    (side) => new Worker(SIDE, { eval: true, workerData: { state, side, mode: args.mode } }),
  );
  const passed = sides.map(
    (worker) =>
      new Promise<number>((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
        worker.once("exit", (code) =>
          reject(new Error(`a wake-up thread exited with code ${code}`)),
        );
      }),
  );
  const start = performance.now();
  await new Promise((resolve) => setTimeout(resolve, args.durationMs));
  Atomics.store(words, STOP, 1);
  Atomics.notify(words, TURN);
  const elapsedMs = performance.now() - start;
  const passes = (await Promise.all(passed)).reduce((total, count) => total + count, 0);
  await Promise.all(sides.map((worker) => worker.terminate()));
  // Each pass is one wake-up of the other side (the threads' start-up is in the time too, which
  // a run of a second or more makes small).
  return passes > 0 ? (elapsedMs * 1000) / passes : Number.NaN;
}
