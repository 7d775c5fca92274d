import { createServer, type Socket, connect as tcpConnect } from "node:net";
import { blockEventLoop } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { ReadDeadlineWatchdog } from "./read-deadline-watchdog.js";

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("ReadDeadlineWatchdog", () => {
  it("calls the check when armed, and again after the poll phase when asked to confirm", async () => {
    const calls: boolean[] = [];
    const watchdog = new ReadDeadlineWatchdog((afterPoll) => {
      calls.push(afterPoll);
      if (!afterPoll) watchdog.confirmAfterPoll();
    });
    watchdog.arm(1);
    await expect.poll(() => calls).toEqual([false, true]);
  });

  it("stop cancels an armed timer and a pending confirmation", async () => {
    const calls: boolean[] = [];
    const watchdog = new ReadDeadlineWatchdog((afterPoll) => calls.push(afterPoll));
    watchdog.arm(1);
    watchdog.stop();
    watchdog.confirmAfterPoll();
    watchdog.stop();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await turn();
    expect(calls).toEqual([]);
  });

  it("confirms after bytes that arrived while the event loop was blocked were read", async () => {
    let received = 0;
    const server = createServer((socket) =>
      socket.on("data", (chunk) => (received += chunk.length)),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const client: Socket = tcpConnect(port, "127.0.0.1");
    await new Promise<void>((resolve) => client.once("connect", () => resolve()));
    try {
      const seen: { afterPoll: boolean; received: number }[] = [];
      const watchdog = new ReadDeadlineWatchdog((afterPoll) => {
        seen.push({ afterPoll, received });
        if (!afterPoll) watchdog.confirmAfterPoll();
      });
      watchdog.arm(5);
      // The bytes reach the server's socket now; the timer comes due while the loop is blocked.
      client.write(Buffer.alloc(100));
      blockEventLoop(50);
      await expect.poll(() => seen.length).toBe(2);
      // The timer ran before the poll phase read the bytes, the confirmation after it.
      expect(seen).toEqual([
        { afterPoll: false, received: 0 },
        { afterPoll: true, received: 100 },
      ]);
    } finally {
      client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
