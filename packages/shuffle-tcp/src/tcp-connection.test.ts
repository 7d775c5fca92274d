import { createServer, type Server, type Socket } from "node:net";
import { type ConnectionHandler, READ_BUFFER_BYTES } from "@sluice/network/plugin";
import { afterEach, describe, expect, it } from "vitest";
import { TcpTransport } from "./tcp-transport.js";

const MAX_FRAME = 1 << 20;

/** A plain server that writes `payload` to every client as soon as it connects. */
async function sendingServer(
  payload: Buffer,
): Promise<{ server: Server; port: number; sent: () => boolean }> {
  const sockets = new Set<Socket>();
  let finished = false;
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.end(payload, () => {
      finished = true;
    });
  });
  server.on("close", () => {
    for (const socket of sockets) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { server, port: address.port, sent: () => finished };
}

describe("TcpConnection reading into a reused buffer", () => {
  const servers: Server[] = [];

  afterEach(async () => {
    for (const server of servers.splice(0)) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("delivers every byte in order, also bytes read before the handler was set, across many reads of one buffer", async () => {
    // Several times the read buffer, so the same memory is reused for later reads: a handler
    // that saw a chunk after it was overwritten would see the wrong bytes.
    const payload = Buffer.alloc(5 * READ_BUFFER_BYTES + 123);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 31 + (i >>> 8)) & 0xff;
    const { server, port, sent } = await sendingServer(payload);
    servers.push(server);
    const connection = await new TcpTransport().connect({
      host: "127.0.0.1",
      port,
      connectTimeoutMs: 5_000,
      maxFrameSize: MAX_FRAME,
    });
    // The server's bytes are on their way, and the client reads them before anyone listens.
    await expect.poll(sent).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    const received: Buffer[] = [];
    let closed = false;
    const handler: ConnectionHandler = {
      // Copy: the chunk is only valid during the call.
      onData: (chunk) => received.push(Buffer.from(chunk)),
      onDrain: () => {},
      onClose: () => {
        closed = true;
      },
    };
    connection.setHandler(handler);
    await expect.poll(() => closed).toBe(true);
    expect(Buffer.concat(received).equals(payload)).toBe(true);
  });
});
