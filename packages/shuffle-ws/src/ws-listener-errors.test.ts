import type { Server } from "node:http";
import { describeListenerErrorsSuite } from "@sluice/shuffle-tck/transport";
import { vi } from "vitest";
import { WsTransport } from "./ws-transport.js";

// Captures the HTTP servers the transport creates, so the suite can make one fail after it
// listens; ws re-emits their errors.
const created = vi.hoisted(() => [] as Server[]);
vi.mock("node:http", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:http")>();
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
  "ws",
  () => new WsTransport(),
  (error) => created.at(-1)?.emit("error", error),
);
