import { LimitExceededError } from "@sluice/core";
import type { TransportConnection, TransportServer } from "@sluice/network/plugin";
import type { ReadableConfig } from "@sluice/runtime-api";
import type { TcpTransport } from "@sluice/shuffle-tcp";
import { FrameConnection, type FrameHandler } from "./frame-connection.js";
import { RemoteShuffleOptions } from "./remote-shuffle-options.js";

/** The limits of the remote shuffle's two ports (`remote-shuffle.rpc.*`). */
export interface RpcLimits {
  readonly maxMessageSize: number;
  readonly maxConnections: number;
  readonly idleConnectionTimeoutMs: number;
  readonly frameReadTimeoutMs: number;
  readonly maxOutboundBytes: number;
}

/** Reads `remote-shuffle.rpc.*`. */
export function readRpcLimits(configuration: ReadableConfig): RpcLimits {
  return {
    maxMessageSize: configuration.get(RemoteShuffleOptions.RPC_MAX_MESSAGE_SIZE),
    maxConnections: configuration.get(RemoteShuffleOptions.RPC_MAX_CONNECTIONS),
    idleConnectionTimeoutMs: configuration.get(RemoteShuffleOptions.RPC_IDLE_CONNECTION_TIMEOUT),
    frameReadTimeoutMs: configuration.get(RemoteShuffleOptions.RPC_FRAME_READ_TIMEOUT),
    maxOutboundBytes: configuration.get(RemoteShuffleOptions.RPC_MAX_OUTBOUND_BYTES_PER_CONNECTION),
  };
}

/** What one port of the remote shuffle holds for its peers right now. */
export interface RpcServerStats {
  /** Open connections. */
  readonly connections: number;
  /** Bytes of replies waiting for peers that have not taken them. */
  readonly queuedOutboundBytes: number;
  /** Connections that stopped reading because their peer does not take its replies. */
  readonly pausedConnections: number;
}

/** What {@link FrameServer.listen} needs. */
export interface FrameServerOptions {
  /** How errors name the server ("the shuffle manager", "shuffle worker host:port"). */
  readonly name: () => string;
  readonly transport: TcpTransport;
  readonly host: string;
  readonly port: number;
  readonly limits: RpcLimits;
  /**
   * Makes the handler of an accepted connection (within the connection cap). The connection
   * starts with the small frame limit and the idle timeout (a peer must say what it wants in
   * time); the handler widens or lifts them as the peer proves itself.
   */
  readonly accept: (frames: FrameConnection) => FrameHandler;
  /** Server-level errors after listening (accept failing with EMFILE, ...). */
  readonly onError?: (error: Error) => void;
}

/**
 * A listening port of the remote shuffle's own protocol: the shuffle manager's and each shuffle
 * worker's. It applies the limits every connection gets before it proved anything — at most
 * `remote-shuffle.rpc.max-connections` at once (a further one is refused with
 * `SLUICE_ERR_LIMIT_EXCEEDED`), frames of at most `remote-shuffle.rpc.max-message-size`, the
 * frame-read and idle timeouts, the outbound budget — as the network shuffle's data server does.
 */
export class FrameServer {
  private readonly connections = new Set<FrameConnection>();
  private closed = false;

  private constructor(
    private readonly server: TransportServer,
    private readonly options: FrameServerOptions,
  ) {}

  /** Listens; resolves once bound. */
  static async listen(options: FrameServerOptions): Promise<FrameServer> {
    let self: FrameServer | undefined;
    const server = await options.transport.listen({
      host: options.host,
      port: options.port,
      maxFrameSize: options.limits.maxMessageSize,
      onConnection: (connection) => {
        if (self === undefined || self.closed) connection.destroy();
        else self.accept(connection);
      },
      ...(options.onError === undefined ? {} : { onError: options.onError }),
    });
    self = new FrameServer(server, options);
    return self;
  }

  /** The bound port. */
  get port(): number {
    return this.server.port;
  }

  /**
   * Admitted connections (a refused one is not counted), the replies waiting for their peers,
   * and the connections that stopped reading (a push session's back-pressure, or a peer that
   * does not take its replies).
   */
  stats(): RpcServerStats {
    let queuedOutboundBytes = 0;
    let pausedConnections = 0;
    for (const connection of this.connections) {
      queuedOutboundBytes += connection.queuedOutboundBytes;
      if (connection.isReadingPaused()) pausedConnections++;
    }
    return { connections: this.connections.size, queuedOutboundBytes, pausedConnections };
  }

  /** Stops listening and destroys every connection. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const connection of this.connections) connection.destroy();
    await this.server.close();
  }

  private accept(connection: TransportConnection): void {
    const { limits } = this.options;
    const frameLimits = {
      maxFrameSize: limits.maxMessageSize,
      maxFrameSizeSource: "'remote-shuffle.rpc.max-message-size'",
      frameReadTimeoutMs: limits.frameReadTimeoutMs,
      maxOutboundBytes: limits.maxOutboundBytes,
    };
    if (this.connections.size >= limits.maxConnections) {
      const refused = new FrameConnection(
        connection,
        { onFrame: () => {}, onClose: () => {} },
        frameLimits,
      );
      refused.refuse(
        new LimitExceededError(
          `${this.options.name()} already has ${this.connections.size} connections ('remote-shuffle.rpc.max-connections' = ${limits.maxConnections}); refused the connection from ${connection.remoteAddress}`,
        ),
      );
      return;
    }
    const frames = new FrameConnection(
      connection,
      (self) => {
        const handler = this.options.accept(self);
        return {
          onFrame: (type, payload) => handler.onFrame(type, payload),
          onClose: (cause) => {
            this.connections.delete(self);
            handler.onClose(cause);
          },
          ...(handler.onDrain === undefined ? {} : { onDrain: () => handler.onDrain?.() }),
          ...(handler.onRefused === undefined
            ? {}
            : { onRefused: (error: Error) => handler.onRefused?.(error) }),
        };
      },
      frameLimits,
    );
    this.connections.add(frames);
  }
}
