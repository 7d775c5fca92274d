import { afterEach, describe, expect, it } from "vitest";
import { startInWorker } from "../memory/test-support/worker-threads.js";
import { waitFor } from "../testing/index.js";
import { ThreadDoorbell } from "./thread-doorbell.js";

const doorbells: ThreadDoorbell[] = [];
afterEach(() => {
  for (const doorbell of doorbells.splice(0)) doorbell.close();
});

function doorbellOf(
  signals: SharedArrayBuffer,
  thread: number,
  options?: { recheckMs?: number },
): ThreadDoorbell {
  const doorbell = new ThreadDoorbell(signals, thread, options);
  doorbells.push(doorbell);
  return doorbell;
}

describe("ThreadDoorbell", () => {
  it("calls the handler of each rung endpoint once, however often it was rung meanwhile, and no other", async () => {
    const signals = ThreadDoorbell.createSignals(2);
    const mine = doorbellOf(signals, 0);
    const calls: string[] = [];
    const a = mine.register(() => calls.push("a"));
    mine.register(() => calls.push("b"));
    const c = mine.register(() => calls.push("c"));
    const other = doorbellOf(signals, 1);
    for (let i = 0; i < 5; i++) other.ring(0, a);
    other.ring(0, c);
    await waitFor(() => calls.length >= 2, { what: "both handlers called" });
    // One more turn: nothing else comes.
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls.sort()).toEqual(["a", "c"]);
  });

  it("wakes a thread that waits for its endpoints when another thread rings one", async () => {
    const signals = ThreadDoorbell.createSignals(2);
    const mine = doorbellOf(signals, 0);
    let rung = 0;
    const endpoint = mine.register(() => rung++);
    // Let this thread's doorbell go to sleep first.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const ringer = startInWorker(
      `
        const doorbell = new core.ThreadDoorbell(data.signals, 1);
        for (let i = 0; i < 3; i++) {
          doorbell.ring(0, data.endpoint);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        return "rung";
      `,
      { signals, endpoint },
    );
    expect(await ringer.result).toBe("rung");
    await waitFor(() => rung >= 1, { what: "the handler called from the other thread's ring" });
  });

  it("loses no ring when two threads ring each other 3,000 times, each alternately busy and waiting", async () => {
    const rounds = 3_000;
    const signals = ThreadDoorbell.createSignals(2);
    // No periodic look: a lost wake-up hangs the test instead of costing a pause.
    const mine = doorbellOf(signals, 0, { recheckMs: Number.POSITIVE_INFINITY });
    let received = 0;
    let pinged!: () => void;
    const done = new Promise<void>((resolve) => {
      pinged = resolve;
    });
    // Endpoint 0 on both threads: the first registration of a doorbell.
    mine.register(() => {
      received++;
      if (received === rounds) pinged();
      else if (received % 4 === 0) setTimeout(() => mine.ring(1, 0), 1);
      else mine.ring(1, 0);
    });
    const peer = startInWorker(
      `
        const doorbell = new core.ThreadDoorbell(data.signals, 1, { recheckMs: Infinity });
        // A waiting doorbell does not keep a thread alive (a slot thread's port does).
        const alive = setInterval(() => {}, 1000);
        let count = 0;
        await new Promise((resolve) => {
          doorbell.register(() => {
            count++;
            // Busy for a while every third round: the other side rings a thread that is not waiting.
            if (count % 3 === 0) {
              doorbell.markActive();
              const end = performance.now() + 0.2;
              while (performance.now() < end);
            }
            doorbell.ring(0, 0);
            if (count === data.rounds) resolve();
          });
        });
        doorbell.close();
        clearInterval(alive);
        return count;
      `,
      { signals, rounds },
    );
    mine.ring(1, 0);
    await done;
    expect(await peer.result).toBe(rounds);
    expect(received).toBe(rounds);
  });

  it("no longer calls an endpoint that was unregistered", async () => {
    const signals = ThreadDoorbell.createSignals(1);
    const mine = doorbellOf(signals, 0);
    let calls = 0;
    const endpoint = mine.register(() => calls++);
    const keep = mine.register(() => {});
    mine.unregister(endpoint);
    mine.ring(0, endpoint);
    mine.ring(0, keep);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(calls).toBe(0);
  });
});
