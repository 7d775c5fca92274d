import { createConnection, createServer, type Server, type Socket } from "node:net";
import { PartitionConnectionError, TimeoutError } from "@sluice/core";
import type {
  ConnectOptions,
  ListenOptions,
  Transport,
  TransportConnection,
  TransportServer,
} from "@sluice/network";
import { TcpConnection } from "./tcp-connection.js";

/** Options of the TCP transport. */
export interface TcpTransportOptions {
  /**
   * The data server's socket high-water mark in bytes. Credit already bounds what is in flight;
   * this only decides how many frames are batched before `write()` asks the writer to wait for
   * drain. (Clients send only small control messages and keep Node's default.)
   */
  readonly highWaterMark?: number;
}

const DEFAULT_HIGH_WATER_MARK = 256 * 1024;

/**
 * The Netty-like transport of the default plugin: plain TCP sockets from node:net, one per pair
 * of workers (per connection index), carrying the length-prefixed protocol frames.
 */
export class TcpTransport implements Transport {
  readonly name = "tcp";
  private readonly highWaterMark: number;

  constructor(options: TcpTransportOptions = {}) {
    this.highWaterMark = options.highWaterMark ?? DEFAULT_HIGH_WATER_MARK;
  }

  listen(options: ListenOptions): Promise<TransportServer> {
    const sockets = new Set<Socket>();
    const server: Server = createServer(
      { noDelay: true, keepAlive: true, highWaterMark: this.highWaterMark },
      (socket) => {
        sockets.add(socket);
        socket.once("close", () => sockets.delete(socket));
        options.onConnection(new TcpConnection(socket));
      },
    );
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => {
        server.off("error", reject);
        const address = server.address();
        const port = typeof address === "object" && address !== null ? address.port : options.port;
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
    return new Promise((resolve, reject) => {
      const socket = createConnection({
        host: options.host,
        port: options.port,
        noDelay: true,
        keepAlive: true,
      });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(
          new PartitionConnectionError(`connecting to ${address} over tcp timed out`, {
            cause: new TimeoutError(`no connection within ${options.connectTimeoutMs} ms`),
          }),
        );
      }, options.connectTimeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(new TcpConnection(socket, address));
      });
      socket.once("error", (error) => {
        clearTimeout(timer);
        reject(
          new PartitionConnectionError(
            `connecting to ${address} over tcp failed: ${error.message}`,
            {
              cause: error,
            },
          ),
        );
      });
    });
  }
}
