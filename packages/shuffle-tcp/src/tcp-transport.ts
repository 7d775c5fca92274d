import { createConnection, createServer, type Server, type Socket } from "node:net";
import * as tls from "node:tls";
import { PartitionConnectionError, TimeoutError } from "@sluice/core";
import {
  type ConnectOptions,
  checkFingerprint,
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
import { DEFAULT_KEEP_ALIVE_DELAY_MS, TcpConnection } from "./tcp-connection.js";

/** Options of the TCP transport. */
export interface TcpTransportOptions {
  /**
   * The data server's socket high-water mark in bytes. Credit already bounds what is in flight;
   * this only decides how many frames are batched before `write()` asks the writer to wait for
   * drain. (Clients send only small control messages and keep Node's default.)
   */
  readonly highWaterMark?: number;
  /** Mutual TLS for every data connection (`security.ssl.internal.*`); plaintext when absent. */
  readonly tls?: TlsSettings | undefined;
  /**
   * TCP keepalive's idle time on every connection (default: `keepAliveDelayFor` the default
   * `heartbeat.timeout`): never shorter than the heartbeat's timeout, so that a network cut the
   * cluster's heartbeats ride out does not end a data connection either.
   */
  readonly keepAliveDelayMs?: number;
}

const DEFAULT_HIGH_WATER_MARK = 256 * 1024;

/**
 * The Netty-like transport of the default plugin: TCP sockets from node:net (node:tls with mutual
 * authentication when configured), one per pair of workers and connection index, carrying the
 * length-prefixed protocol frames.
 */
export class TcpTransport implements Transport {
  readonly name: string;
  private readonly highWaterMark: number;
  private readonly tls: TlsSettings | undefined;
  private readonly keepAliveDelayMs: number;

  constructor(options: TcpTransportOptions = {}) {
    this.highWaterMark = options.highWaterMark ?? DEFAULT_HIGH_WATER_MARK;
    this.keepAliveDelayMs = options.keepAliveDelayMs ?? DEFAULT_KEEP_ALIVE_DELAY_MS;
    this.tls = options.tls;
    this.name = this.tls === undefined ? "tcp" : "tcp+tls";
  }

  listen(options: ListenOptions): Promise<TransportServer> {
    const sockets = new Set<Socket>();
    const accept = (socket: Socket) => {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
      options.onConnection(new TcpConnection(socket, undefined, undefined, this.keepAliveDelayMs));
    };
    const settings = this.tls;
    let server: Server;
    if (settings === undefined) {
      server = createServer(
        {
          noDelay: true,
          keepAlive: true,
          keepAliveInitialDelay: this.keepAliveDelayMs,
          highWaterMark: this.highWaterMark,
        },
        accept,
      );
    } else {
      const tlsServer = tls.createServer({
        ...tlsServerOptions(settings),
        noDelay: true,
        keepAlive: true,
        keepAliveInitialDelay: this.keepAliveDelayMs,
        highWaterMark: this.highWaterMark,
      });
      tlsServer.on("secureConnection", (socket) => {
        const mismatch = checkFingerprint(settings, socket.getPeerCertificate());
        if (mismatch !== undefined) {
          socket.destroy();
          return;
        }
        accept(socket);
      });
      // A client that fails the handshake (untrusted certificate, plaintext, too slow) is dropped
      // and the server keeps serving everyone else. Not reported: the client's own connect fails
      // with the reason, and a port scan must not be able to fill the worker's logs.
      onTlsClientError(tlsServer, (_error, socket) => socket.destroy());
      server = tlsServer;
    }
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => {
        server.off("error", reject);
        const address = server.address();
        const port = typeof address === "object" && address !== null ? address.port : options.port;
        // After listening, server-level errors (e.g. accept failing with EMFILE) must not crash
        // the worker: existing connections keep working, clients retry new ones.
        server.on("error", listenerErrorHandler(options, this.name, port));
        resolve({
          port,
          host: options.host,
          close: () =>
            new Promise<void>((done) => {
              for (const socket of sockets) socket.destroy();
              server.close(() => done());
            }),
        });
      });
    });
  }

  connect(options: ConnectOptions): Promise<TransportConnection> {
    const address = `${options.host}:${options.port}`;
    const settings = this.tls;
    return new Promise((resolve, reject) => {
      // Plaintext client sockets (the consumer side, which receives the data) read into one
      // reused buffer; TLS sockets have no such option.
      const early: Buffer[] = [];
      const reusedRead =
        settings === undefined
          ? new ReusedReadBuffer((chunk) => early.push(Buffer.from(chunk)))
          : undefined;
      const socket: Socket =
        settings === undefined
          ? createConnection({
              host: options.host,
              port: options.port,
              noDelay: true,
              keepAlive: true,
              keepAliveInitialDelay: this.keepAliveDelayMs,
              onread: (reusedRead as ReusedReadBuffer).onread,
            })
          : tls.connect({ host: options.host, port: options.port, ...tlsClientOptions(settings) });
      const fail = (message: string, cause: unknown) => {
        clearTimeout(timer);
        socket.destroy();
        reject(
          new PartitionConnectionError(`connecting to ${address} over ${this.name} ${message}`, {
            cause,
          }),
        );
      };
      const timer = setTimeout(
        () =>
          fail(
            "timed out",
            new TimeoutError(`no connection within ${options.connectTimeoutMs} ms`),
          ),
        options.connectTimeoutMs,
      );
      socket.once(settings === undefined ? "connect" : "secureConnect", () => {
        if (settings !== undefined) {
          const mismatch = checkFingerprint(
            settings,
            (socket as tls.TLSSocket).getPeerCertificate(),
          );
          if (mismatch !== undefined) {
            fail(`failed: ${mismatch}`, undefined);
            return;
          }
        }
        clearTimeout(timer);
        socket.removeAllListeners("error");
        socket.setNoDelay(true);
        resolve(
          new TcpConnection(
            socket,
            address,
            reusedRead === undefined ? undefined : { reusedRead, early },
            this.keepAliveDelayMs,
          ),
        );
      });
      socket.once("error", (error) => fail(`failed: ${error.message}`, error));
    });
  }
}
