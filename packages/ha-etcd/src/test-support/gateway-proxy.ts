import { createServer, request as httpRequest } from "node:http";
import type { Socket } from "node:net";

/**
 * An HTTP proxy on loopback in front of a real etcd's gateway, that can lose the answers of one
 * kind of request (etcd gets the request and applies it, the client gets an error instead: a
 * reply lost on a bad network), or cut the client off while etcd goes on.
 */
export interface GatewayProxy {
  /** `http://127.0.0.1:<port>`: give it as the client's endpoint. */
  readonly endpoint: string;
  /** From now on, the answers of requests to `path` (`/v3/lease/keepalive`) are lost. */
  lose(path: string): void;
  /** Resets every connection, and every new one until {@link GatewayProxy.heal}. */
  cut(): void;
  /** Answers and connections go through again. */
  heal(): void;
  /** How many answers were lost so far. */
  lost(): number;
  /** The paths of every request, in order. */
  readonly paths: string[];
  close(): Promise<void>;
}

/** Starts a {@link GatewayProxy} to `upstream` (`http://127.0.0.1:<port>`). */
export async function startGatewayProxy(upstream: string): Promise<GatewayProxy> {
  const target = new URL(upstream);
  const losing = new Set<string>();
  const paths: string[] = [];
  const sockets = new Set<Socket>();
  let lost = 0;
  let cut = false;
  const server = createServer((incoming, outgoing) => {
    const path = incoming.url ?? "";
    paths.push(path);
    const forwarded = httpRequest(
      {
        hostname: target.hostname,
        port: target.port,
        path,
        method: incoming.method,
        headers: incoming.headers,
      },
      (answer) => {
        if (!losing.has(path)) {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
          return;
        }
        // etcd applied it; the client never hears so.
        answer.resume();
        answer.on("end", () => {
          lost++;
          outgoing.statusCode = 503;
          outgoing.end(JSON.stringify({ error: "the answer was lost (injected)", code: 14 }));
        });
      },
    );
    forwarded.on("error", () => outgoing.destroy());
    outgoing.on("close", () => forwarded.destroy());
    incoming.pipe(forwarded);
  });
  server.on("connection", (socket) => {
    if (cut) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    lose: (path) => losing.add(path),
    cut: () => {
      cut = true;
      for (const socket of sockets) socket.destroy();
    },
    heal: () => {
      cut = false;
      losing.clear();
    },
    lost: () => lost,
    paths,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
