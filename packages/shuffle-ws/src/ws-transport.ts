import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createConnection as createNetConnection, type Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { IllegalArgumentError, PartitionConnectionError, TimeoutError } from "@sluice/core";
import {
  type ConnectOptions,
  checkFingerprint,
  type DeadlineAfterPoll,
  deadlineAfterPoll,
  keepAliveDelayFor,
  type ListenOptions,
  listenerErrorHandler,
  onTlsClientError,
  ReusedReadBuffer,
  type TlsSettings,
  type Transport,
  type TransportConnection,
  type TransportServer,
  tlsClientOptions,
  tlsServerOptions,
} from "@sluice/network/plugin";
import { HeartbeatManagerOptions } from "@sluice/runtime-api";
import { WebSocket, WebSocketServer } from "ws";
import { WsConnection } from "./ws-connection.js";

/** Options of the WebSocket transport. */
export interface WsTransportOptions {
  /**
   * Negotiate permessage-deflate (both sides must enable it). Default false: it costs CPU and
   * per-connection zlib memory, and has a long history of memory fragmentation (ws#1202,
   * node#8871); shuffle data is often compressed already.
   */
  readonly perMessageDeflate?: boolean;
  /**
   * Buffered (not yet sent) bytes at or above which a connection reports itself not writable.
   * Default 1 MiB. `ws.send()` never pushes back, so this is the only bound on what one
   * connection queues.
   */
  readonly highWaterMark?: number;
  /** Buffered bytes below which a not-writable connection fires `onDrain`. Default 256 KiB. */
  readonly lowWaterMark?: number;
  /** Mutual TLS (wss) with Flink's `security.ssl.internal.*` settings; plaintext when absent. */
  readonly tls?: TlsSettings | undefined;
  /**
   * The data server drops a connection that has not completed its WebSocket upgrade this long
   * after it connected (after the TLS handshake, with wss). Default 10 s
   * (`taskmanager.network.websocket.handshake-timeout`).
   */
  readonly handshakeTimeoutMs?: number;
  /**
   * TCP keepalive's idle time on every connection, as the TCP transport's (default:
   * `keepAliveDelayFor` the default `heartbeat.timeout`).
   */
  readonly keepAliveDelayMs?: number;
}

const DEFAULT_HIGH_WATER_MARK = 1024 * 1024;
const DEFAULT_LOW_WATER_MARK = 256 * 1024;
const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;

/** TCP keepalive's idle time for the default `heartbeat.timeout`. */
const DEFAULT_KEEP_ALIVE_DELAY_MS = keepAliveDelayFor(
  HeartbeatManagerOptions.HEARTBEAT_TIMEOUT.defaultValue,
);

/** The only path the data server accepts upgrades on. */
export const WS_SHUFFLE_PATH = "/sluice";

/**
 * The largest message accepted: twice the largest frame. `maxFrameSize` bounds one protocol
 * frame (header included), but one WebSocket message carries one `write()`, which may hold
 * several whole frames: a full BufferResponse frame next to control frames, or the client's
 * batch of credit announcements. Twice the frame limit admits that while still bounding what ws
 * buffers for a message before our decoder checks each frame against `maxFrameSize`. ws
 * enforces it as the message arrives, closing with 1009 (message too big).
 */
function maxPayloadFor(maxFrameSize: number): number {
  return maxFrameSize * 2;
}

/** The host part of a URL: IPv6 literals bracketed. */
function urlHost(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/**
 * The WebSocket transport of `@sluice/shuffle-ws`, over `ws`. The data server (the producer
 * side) is the WebSocket server, so bulk data flows server → client and is never masked; the
 * consumer connects as the client, and only its small control frames pay for masking. Each
 * connection carries the same protocol frames as the TCP transport, one `write()` per binary
 * message.
 */
export class WsTransport implements Transport {
  readonly name: string;
  private readonly tls: TlsSettings | undefined;
  readonly perMessageDeflate: boolean;
  readonly highWaterMark: number;
  readonly lowWaterMark: number;
  readonly handshakeTimeoutMs: number;
  readonly keepAliveDelayMs: number;

  /** @throws IllegalArgumentError when a water mark is not a positive integer or low ≥ high. */
  constructor(options: WsTransportOptions = {}) {
    this.tls = options.tls;
    this.handshakeTimeoutMs = options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    this.keepAliveDelayMs = options.keepAliveDelayMs ?? DEFAULT_KEEP_ALIVE_DELAY_MS;
    this.name = this.tls === undefined ? "ws" : "wss";
    this.perMessageDeflate = options.perMessageDeflate ?? false;
    this.highWaterMark = options.highWaterMark ?? DEFAULT_HIGH_WATER_MARK;
    this.lowWaterMark = options.lowWaterMark ?? DEFAULT_LOW_WATER_MARK;
    if (!Number.isSafeInteger(this.highWaterMark) || this.highWaterMark < 1) {
      throw new IllegalArgumentError(
        `highWaterMark must be a positive integer, got ${this.highWaterMark}`,
      );
    }
    if (!Number.isSafeInteger(this.lowWaterMark) || this.lowWaterMark < 0) {
      throw new IllegalArgumentError(
        `lowWaterMark must be a non-negative integer, got ${this.lowWaterMark}`,
      );
    }
    if (this.lowWaterMark >= this.highWaterMark) {
      throw new IllegalArgumentError(
        `lowWaterMark (${this.lowWaterMark}) must be below highWaterMark (${this.highWaterMark})`,
      );
    }
  }

  listen(options: ListenOptions): Promise<TransportServer> {
    // Our own HTTP server rather than ws' internal one, so that close() can also drop sockets
    // that connected but never finished (or never sent) the upgrade request.
    const upgradeRequired = (_request: IncomingMessage, response: ServerResponse) => {
      const body = STATUS_CODES[426] ?? "Upgrade Required";
      response.writeHead(426, { "Content-Type": "text/plain", "Content-Length": body.length });
      response.end(body);
    };
    // A socket that connected but has not completed the upgrade holds a file descriptor and
    // parser state; Node's HTTP server would wait a minute or more for its headers. Each gets a
    // deadline that the upgrade clears, judged only after the poll phase read what the peer sent
    // (a stall of the event loop must not close a peer whose upgrade request is complete).
    const upgradeDeadlines = new Map<Socket, DeadlineAfterPoll>();
    const clearDeadline = (socket: Socket) => {
      const deadline = upgradeDeadlines.get(socket);
      if (deadline === undefined) return;
      deadline.clear();
      upgradeDeadlines.delete(socket);
    };
    const armDeadline = (socket: Socket) => {
      const deadline = deadlineAfterPoll(this.handshakeTimeoutMs, () => {
        upgradeDeadlines.delete(socket);
        socket.destroy();
      });
      upgradeDeadlines.set(socket, deadline);
      socket.once("close", () => clearDeadline(socket));
    };
    const settings = this.tls;
    let httpServer: Server;
    if (settings === undefined) {
      httpServer = createServer(upgradeRequired);
      httpServer.on("connection", armDeadline);
    } else {
      const httpsServer = createHttpsServer(tlsServerOptions(settings), upgradeRequired);
      httpsServer.on("secureConnection", (socket: TLSSocket) => {
        if (checkFingerprint(settings, socket.getPeerCertificate()) !== undefined) {
          socket.destroy();
          return;
        }
        // The TLS handshake has its own timeout; the upgrade gets its deadline from here.
        armDeadline(socket);
      });
      // Clients that fail the handshake (untrusted certificate, plaintext) are dropped. Not
      // reported: the client's own connect fails with the reason, and a port scan must not be
      // able to fill the worker's logs.
      onTlsClientError(httpsServer, (_error, socket) => socket.destroy());
      httpServer = httpsServer;
    }
    const wss = new WebSocketServer({
      server: httpServer,
      // Any other path is refused with 400 during the handshake.
      path: WS_SHUFFLE_PATH,
      perMessageDeflate: this.perMessageDeflate,
      maxPayload: maxPayloadFor(options.maxFrameSize),
      clientTracking: true,
    });
    const connections = new Set<WsConnection>();
    wss.on("connection", (ws, request) => {
      const socket = request.socket;
      clearDeadline(socket);
      // As TcpConnection: notice a peer that vanished without closing.
      socket.setKeepAlive(true, this.keepAliveDelayMs);
      const connection = new WsConnection(ws, {
        remoteAddress: `${socket.remoteAddress}:${socket.remotePort}`,
        highWaterMark: this.highWaterMark,
        lowWaterMark: this.lowWaterMark,
        serverSocket: socket,
      });
      connections.add(connection);
      ws.once("close", () => connections.delete(connection));
      options.onConnection(connection);
    });

    return new Promise((resolve, reject) => {
      const onListenError = (error: Error) => {
        wss.close();
        reject(error);
      };
      // ws re-emits the HTTP server's errors on the WebSocketServer.
      wss.once("error", onListenError);
      httpServer.listen(options.port, options.host, () => {
        wss.off("error", onListenError);
        const address = httpServer.address();
        const port = typeof address === "object" && address !== null ? address.port : options.port;
        // Later server errors (accept failing with EMFILE, ...) do not stop the listener, as
        // with Netty.
        wss.on("error", listenerErrorHandler(options, this.name, port));
        let closing: Promise<void> | undefined;
        resolve({
          port,
          host: options.host,
          close: () => {
            closing ??= new Promise<void>((done) => {
              let pending = 2;
              const oneDone = () => {
                if (--pending === 0) done();
              };
              // Stops handling upgrades; fires once every tracked client has closed.
              wss.close(() => oneDone());
              httpServer.close(() => oneDone());
              for (const socket of [...upgradeDeadlines.keys()]) clearDeadline(socket);
              for (const connection of connections) connection.destroy();
              for (const client of wss.clients) client.terminate();
              // Sockets still in (or before) the HTTP upgrade are not WebSocket clients yet.
              httpServer.closeAllConnections();
            });
            return closing;
          },
        });
      });
    });
  }

  connect(options: ConnectOptions): Promise<TransportConnection> {
    const address = `${options.host}:${options.port}`;
    const settings = this.tls;
    const scheme = settings === undefined ? "ws" : "wss";
    const url = `${scheme}://${urlHost(options.host)}:${options.port}${WS_SHUFFLE_PATH}`;
    return new Promise((resolve, reject) => {
      let settled = false;
      let ws: WebSocket | undefined;
      const fail = (error: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        // Aborts the request and destroys its socket; a no-op once ws closed it itself.
        ws?.terminate();
        reject(error);
      };
      // Our own deadline, armed before the request: ws' handshakeTimeout is an idle timeout on
      // the socket, started only once TCP connected, so it is only a backstop here.
      const timer = setTimeout(() => {
        fail(
          new PartitionConnectionError(`connecting to ${address} over ${scheme} timed out`, {
            cause: new TimeoutError(
              `no WebSocket connection to ${address} within ${options.connectTimeoutMs} ms`,
            ),
          }),
        );
      }, options.connectTimeoutMs);
      const maxPayload = maxPayloadFor(options.maxFrameSize);
      // A plaintext client reads into one reused buffer (TLS sockets have no such option). Until
      // the WsConnection takes the reads over, each is pushed, copied, into the socket's readable
      // side, as Node pushes a read without `onread`: the HTTP client and then ws read it from
      // there and keep what they are given.
      let plainSocket: Socket | undefined;
      const reusedRead =
        settings === undefined
          ? new ReusedReadBuffer((chunk) => plainSocket?.push(Buffer.from(chunk)))
          : undefined;
      try {
        ws = new WebSocket(url, {
          perMessageDeflate: this.perMessageDeflate,
          maxPayload,
          handshakeTimeout: options.connectTimeoutMs,
          followRedirects: false,
          ...(settings === undefined
            ? {
                createConnection: () => {
                  plainSocket = createNetConnection({
                    host: options.host,
                    port: options.port,
                    onread: (reusedRead as ReusedReadBuffer).onread,
                  });
                  return plainSocket;
                },
              }
            : {
                ...tlsClientOptions(settings),
                // The same "any host name" check as tlsClientOptions', typed as @types/ws wants
                // it (Node's tls treats any falsy result as "identity ok").
                checkServerIdentity: () => false,
              }),
        });
      } catch (error) {
        fail(
          new PartitionConnectionError(
            `connecting to ${address} over ${scheme} failed: ${(error as Error).message}`,
            { cause: error },
          ),
        );
        return;
      }
      const socket = ws;
      socket.binaryType = "nodebuffer";
      // Stays attached after a failure: ws may still emit 'error' while it tears down.
      const onHandshakeError = (error: Error) => {
        fail(
          new PartitionConnectionError(
            `connecting to ${address} over ${scheme} failed: ${error.message}`,
            {
              cause: error,
            },
          ),
        );
      };
      socket.on("error", onHandshakeError);
      let upgradedSocket: Socket | undefined;
      socket.once("upgrade", (response) => {
        upgradedSocket = response.socket;
        response.socket.setKeepAlive(true, this.keepAliveDelayMs);
        if (settings === undefined) return;
        const mismatch = checkFingerprint(
          settings,
          (response.socket as TLSSocket).getPeerCertificate(),
        );
        if (mismatch !== undefined) {
          fail(
            new PartitionConnectionError(`connecting to ${address} over wss failed: ${mismatch}`),
          );
        }
      });
      socket.once("open", () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.off("error", onHandshakeError);
        resolve(
          new WsConnection(socket, {
            remoteAddress: address,
            highWaterMark: this.highWaterMark,
            lowWaterMark: this.lowWaterMark,
            ...(upgradedSocket === undefined
              ? {}
              : { clientReads: { socket: upgradedSocket, reusedRead, maxPayload } }),
          }),
        );
      });
    });
  }
}
