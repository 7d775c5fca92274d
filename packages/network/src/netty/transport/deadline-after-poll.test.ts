import { createServer, type Socket, connect as tcpConnect } from "node:net";
import { blockEventLoop } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { deadlineAfterPoll } from "./deadline-after-poll.js";

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("deadlineAfterPoll", () => {
  it("calls onExpired once the time passed, and never after clear", async () => {
    let expired = 0;
    deadlineAfterPoll(1, () => expired++);
    deadlineAfterPoll(1, () => expired++).clear();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await turn();
    expect(expired).toBe(1);
  });

  it("judges after the poll phase read bytes that arrived while the event loop was blocked", async () => {
    let received = 0;
    const server = createServer((socket) =>
      socket.on("data", (chunk) => {
        received += chunk.length;
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const client: Socket = tcpConnect(port, "127.0.0.1");
    await new Promise<void>((resolve) => client.once("connect", () => resolve()));
    try {
      let receivedAtVerdict: number | undefined;
      deadlineAfterPoll(5, () => {
        receivedAtVerdict = received;
      });
      // The bytes reach the server's socket now; the timer comes due while the loop is blocked,
      // and libuv runs it before the poll phase reads them.
      client.write(Buffer.alloc(100));
      blockEventLoop(50);
      await expect.poll(() => receivedAtVerdict).toBeDefined();
      expect(receivedAtVerdict).toBe(100);
    } finally {
      client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
