import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** One request the fake gateway received. */
export interface GatewayRequest {
  readonly path: string;
  readonly body: Record<string, unknown>;
}

/** An HTTP server on loopback that answers as the test says: etcd's gateway gone wrong. */
export interface FakeGateway {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** Every request, in order. */
  readonly requests: GatewayRequest[];
  /** Closes the server and every connection. */
  close(): Promise<void>;
}

/**
 * Starts a fake etcd gateway on 127.0.0.1, port 0, that hands every request (its body parsed) to
 * `answer`, which writes whatever bytes the test needs (or nothing at all).
 */
export async function startFakeGateway(
  answer: (request: GatewayRequest, response: ServerResponse) => void,
): Promise<FakeGateway> {
  const requests: GatewayRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((incoming: IncomingMessage, response) => {
    let text = "";
    incoming.setEncoding("utf8");
    incoming.on("data", (chunk: string) => {
      text += chunk;
    });
    incoming.on("end", () => {
      const request = { path: incoming.url ?? "", body: JSON.parse(text || "{}") };
      requests.push(request);
      answer(request, response);
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A valid etcd response header at `revision`. */
export function header(revision: number): Record<string, unknown> {
  return {
    cluster_id: "1",
    member_id: "2",
    revision: String(revision),
    raft_term: "2",
  };
}
