import type { Server } from "node:net";
import { TRANSPORT_WARNING_TYPE, type TransportServer } from "@sluice/network";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TcpTransport } from "./tcp-transport.js";

// Captures the servers the transport creates, so a test can make one fail after it listens
// (an accept failing with EMFILE cannot be provoked reliably).
const created = vi.hoisted(() => [] as Server[]);
vi.mock("node:net", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:net")>();
  return {
    ...actual,
    createServer: (...args: Parameters<typeof actual.createServer>) => {
      const server = actual.createServer(...args);
      created.push(server);
      return server;
    },
  };
});

const MAX_FRAME = 1 << 20;

function acceptFailure(): Error {
  return Object.assign(new Error("accept EMFILE"), { code: "EMFILE", syscall: "accept" });
}

describe("TcpTransport listener errors", () => {
  const servers: TransportServer[] = [];

  afterEach(async () => {
    vi.restoreAllMocks();
    for (const server of servers.splice(0)) await server.close();
  });

  it("hands an error of the listening server to onError and keeps accepting connections", async () => {
    const errors: Error[] = [];
    const transport = new TcpTransport();
    const server = await transport.listen({
      host: "127.0.0.1",
      port: 0,
      maxFrameSize: MAX_FRAME,
      onConnection: (connection) => connection.close(),
      onError: (error) => errors.push(error),
    });
    servers.push(server);
    const failure = acceptFailure();
    created.at(-1)?.emit("error", failure);
    expect(errors).toEqual([failure]);
    const connection = await transport.connect({
      host: "127.0.0.1",
      port: server.port,
      connectTimeoutMs: 5_000,
      maxFrameSize: MAX_FRAME,
    });
    connection.destroy();
  });

  it("emits a SluiceTransportWarning naming the server when nobody passed onError", async () => {
    const warnings = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    const server = await new TcpTransport().listen({
      host: "127.0.0.1",
      port: 0,
      maxFrameSize: MAX_FRAME,
      onConnection: (connection) => connection.close(),
    });
    servers.push(server);
    created.at(-1)?.emit("error", acceptFailure());
    expect(warnings).toHaveBeenCalledWith(
      `tcp data server 127.0.0.1:${server.port}: accept EMFILE`,
      expect.objectContaining({ type: TRANSPORT_WARNING_TYPE }),
    );
  });
});
