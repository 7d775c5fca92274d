import { describeHostilePeerSuite } from "@sluice/shuffle-tck/transport";
import { WebSocket, WebSocketServer } from "ws";
import { WS_PLUGIN } from "./test-support/plugin.js";
import { WS_SHUFFLE_PATH } from "./ws-transport.js";

describeHostilePeerSuite("WebSocket", WS_PLUGIN, {
  sendRaw: (port, bytes) =>
    new Promise((resolve) => {
      const answer: Buffer[] = [];
      const ws = new WebSocket(`ws://127.0.0.1:${port}${WS_SHUFFLE_PATH}`);
      const timer = setTimeout(() => {
        ws.terminate();
        resolve({ answer, closed: false });
      }, 5_000);
      ws.on("open", () => ws.send(bytes));
      ws.on("message", (data: Buffer) => answer.push(data));
      ws.on("error", () => {});
      ws.on("close", () => {
        clearTimeout(timer);
        resolve({ answer, closed: true });
      });
    }),
  startGarbageServer: async (garbage) => {
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0, path: WS_SHUFFLE_PATH });
    await new Promise((r) => server.once("listening", r));
    server.on("connection", (ws) => ws.send(garbage));
    return {
      port: (server.address() as { port: number }).port,
      close: async () => {
        for (const client of server.clients) client.terminate();
        await new Promise((r) => server.close(r));
      },
    };
  },
});
