import type { Server } from "node:net";
import { describeListenerErrorsSuite } from "@sluice/shuffle-tck/transport";
import { vi } from "vitest";
import { TcpTransport } from "./tcp-transport.js";

// Captures the servers the transport creates, so the suite can make one fail after it listens.
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

describeListenerErrorsSuite(
  "tcp",
  () => new TcpTransport(),
  (error) => created.at(-1)?.emit("error", error),
);
