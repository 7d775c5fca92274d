/**
 * Test helpers for the WebSocket transport: a recording ConnectionHandler and a tracker that
 * closes every server, connection and raw socket a test opened.
 */
import { createServer, type Server, type Socket } from "node:net";
import { type Deferred, deferred } from "@sluice/core";
import type {
  ConnectionHandler,
  TransportConnection,
  TransportServer,
} from "@sluice/network/plugin";
import { WebSocket, WebSocketServer } from "ws";
import { WS_SHUFFLE_PATH, WsTransport, type WsTransportOptions } from "../ws-transport.js";

/** Lets pending I/O callbacks and immediates run (to observe that nothing else arrives). */
export async function settle(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
}

/** A ConnectionHandler that records every call. */
export class RecordingHandler implements ConnectionHandler {
  readonly chunks: Buffer[] = [];
  readonly closes: (Error | undefined)[] = [];
  drains = 0;
  private readonly closed = deferred<Error | undefined>();
  private drained: Deferred<void> | undefined;
  private bytesWaiter: { bytes: number; done: Deferred<Buffer> } | undefined;

  onData(chunk: Buffer): void {
    // Copied: a chunk is valid only during the call (the client reads into a reused buffer).
    this.chunks.push(Buffer.from(chunk));
    this.checkBytes();
  }

  onDrain(): void {
    this.drains++;
    this.drained?.resolve();
  }

  onClose(cause: Error | undefined): void {
    this.closes.push(cause);
    this.closed.resolve(cause);
  }

  /** Resolves with the cause of the first onClose. */
  whenClosed(): Promise<Error | undefined> {
    return this.closed.promise;
  }

  /** Resolves at the next onDrain. */
  whenDrained(): Promise<void> {
    this.drained = deferred<void>();
    return this.drained.promise;
  }

  /** Resolves with everything received once at least `bytes` bytes arrived. */
  whenReceived(bytes: number): Promise<Buffer> {
    const done = deferred<Buffer>();
    this.bytesWaiter = { bytes, done };
    this.checkBytes();
    return done.promise;
  }

  get receivedBytes(): number {
    let n = 0;
    for (const chunk of this.chunks) n += chunk.length;
    return n;
  }

  private checkBytes(): void {
    const waiter = this.bytesWaiter;
    if (waiter !== undefined && this.receivedBytes >= waiter.bytes) {
      this.bytesWaiter = undefined;
      waiter.done.resolve(Buffer.concat(this.chunks));
    }
  }
}

/** Everything a test opened, closed in `closeAll()` (call it from `afterEach`). */
export class Resources {
  private readonly servers: TransportServer[] = [];
  private readonly connections: TransportConnection[] = [];
  private readonly netServers: Server[] = [];
  private readonly sockets: Socket[] = [];
  private readonly webSockets: WebSocket[] = [];
  private readonly webSocketServers: WebSocketServer[] = [];

  server(server: TransportServer): TransportServer {
    this.servers.push(server);
    return server;
  }

  /** Listens with `transport` on a free port of 127.0.0.1; the server is closed by closeAll. */
  async listen(
    transport: WsTransport,
    onConnection: (connection: TransportConnection) => void,
    maxFrameSize = 1024 * 1024,
  ): Promise<TransportServer> {
    return this.server(
      await transport.listen({ host: "127.0.0.1", port: 0, maxFrameSize, onConnection }),
    );
  }

  connection<C extends TransportConnection>(connection: C): C {
    this.connections.push(connection);
    return connection;
  }

  webSocket(ws: WebSocket): WebSocket {
    this.webSockets.push(ws);
    return ws;
  }

  webSocketServer(server: WebSocketServer): WebSocketServer {
    this.webSocketServers.push(server);
    return server;
  }

  socket(socket: Socket): Socket {
    this.sockets.push(socket);
    return socket;
  }

  /** A plain TCP server that accepts and never answers (its sockets are tracked). */
  async silentServer(onSocket?: (socket: Socket) => void): Promise<number> {
    const server = createServer((socket) => {
      this.sockets.push(socket);
      onSocket?.(socket);
    });
    this.netServers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const address = server.address();
    if (typeof address !== "object" || address === null) throw new Error("no address");
    return address.port;
  }

  async closeAll(): Promise<void> {
    for (const connection of this.connections.splice(0)) connection.destroy();
    for (const ws of this.webSockets.splice(0)) ws.terminate();
    for (const server of this.webSocketServers.splice(0)) {
      for (const client of server.clients) client.terminate();
      await new Promise<void>((r) => server.close(() => r()));
    }
    for (const socket of this.sockets.splice(0)) socket.destroy();
    for (const server of this.servers.splice(0)) await server.close();
    for (const server of this.netServers.splice(0)) {
      await new Promise<void>((r) => server.close(() => r()));
    }
  }
}

/** A port nothing listens on (bound once, then released). */
export async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const address = server.address();
  await new Promise<void>((r) => server.close(() => r()));
  if (typeof address !== "object" || address === null) throw new Error("no address");
  return address.port;
}

/** Dials `127.0.0.1:port` with `transport`, with a connect timeout a loaded machine meets. */
export function dial(
  transport: WsTransport,
  port: number,
  maxFrameSize = 1024 * 1024,
): Promise<TransportConnection> {
  return transport.connect({ host: "127.0.0.1", port, connectTimeoutMs: 5_000, maxFrameSize });
}

/** A connected pair over a WsTransport: `server` is the accepted side, `client` the dialer. */
export interface ConnectedPair {
  readonly transport: WsTransport;
  readonly listener: TransportServer;
  readonly server: TransportConnection;
  readonly client: TransportConnection;
  readonly serverHandler: RecordingHandler;
  readonly clientHandler: RecordingHandler;
}

export async function connectedPair(
  resources: Resources,
  options: WsTransportOptions = {},
  maxFrameSize = 1024 * 1024,
): Promise<ConnectedPair> {
  const transport = new WsTransport(options);
  const serverHandler = new RecordingHandler();
  const accepted = deferred<TransportConnection>();
  const listener = await resources.listen(
    transport,
    (connection) => {
      connection.setHandler(serverHandler);
      accepted.resolve(resources.connection(connection));
    },
    maxFrameSize,
  );
  const client = resources.connection(await dial(transport, listener.port, maxFrameSize));
  const clientHandler = new RecordingHandler();
  client.setHandler(clientHandler);
  const server = await accepted.promise;
  return { transport, listener, server, client, serverHandler, clientHandler };
}

/** A WsTransport server connection whose peer is a plain `ws` client (to see the wire). */
export async function serverWithPlainClient(
  resources: Resources,
): Promise<{ server: TransportConnection; serverHandler: RecordingHandler; peer: WebSocket }> {
  const serverHandler = new RecordingHandler();
  const accepted = deferred<TransportConnection>();
  const listener = await resources.listen(new WsTransport(), (connection) => {
    connection.setHandler(serverHandler);
    accepted.resolve(resources.connection(connection));
  });
  const peer = resources.webSocket(
    new WebSocket(`ws://127.0.0.1:${listener.port}${WS_SHUFFLE_PATH}`),
  );
  peer.binaryType = "nodebuffer";
  await new Promise<void>((resolve, reject) => {
    peer.once("open", () => resolve());
    peer.once("error", reject);
  });
  return { server: await accepted.promise, serverHandler, peer };
}

/**
 * A WsTransport client connection whose peer is a plain `ws` server (to send it what the
 * WsTransport server never sends). Resolves once both sides are open.
 */
export async function clientWithPlainServer(
  resources: Resources,
  maxFrameSize = 1024 * 1024,
): Promise<{ client: TransportConnection; clientHandler: RecordingHandler; peer: WebSocket }> {
  const server = resources.webSocketServer(
    new WebSocketServer({ host: "127.0.0.1", port: 0, path: WS_SHUFFLE_PATH }),
  );
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const peer = new Promise<WebSocket>((resolve) => server.once("connection", resolve));
  const address = server.address();
  if (typeof address !== "object" || address === null) throw new Error("no address");
  const client = resources.connection(await dial(new WsTransport(), address.port, maxFrameSize));
  const clientHandler = new RecordingHandler();
  client.setHandler(clientHandler);
  return { client, clientHandler, peer: await peer };
}
