/**
 * The small seam between the transport-neutral shuffle and a concrete byte transport. The TCP
 * plugin implements it over node:net (optionally node:tls), the WebSocket plugin over `ws`. Both
 * carry the same protocol frames, so everything above this interface — codec, credit-based
 * server queue, client handler, channels — is shared.
 */

/** Receives a connection's events. Set once, before any data can arrive. */
export interface ConnectionHandler {
  /**
   * Bytes arrived. A chunk may hold part of a frame or several frames. It is valid only during
   * the call: a transport may read the next bytes into the same memory, so copy what you keep.
   */
  onData(chunk: Buffer): void;
  /**
   * The connection's send buffer fell below its low-water mark: writing may continue. Owed
   * exactly once after any `false` from `write()` or `isWritable()`.
   */
  onDrain(): void;
  /**
   * The connection closed, with the cause when it did not close cleanly. Called exactly once,
   * after which no other callback follows.
   */
  onClose(cause: Error | undefined): void;
  /**
   * The peer broke the transport's own framing in a way the protocol decoder never sees (a
   * WebSocket text message). The handler answers as for a decoding error — a data server sends
   * a fatal ErrorResponse — and closes the connection; the transport ignores what the peer sends
   * afterwards. Optional: without it the transport destroys the connection with `error`.
   */
  onProtocolViolation?(error: Error): void;
}

/** One established connection (either side). */
export interface TransportConnection {
  /** `host:port` of the peer, for error messages. */
  readonly remoteAddress: string;
  /** Installs the handler; must be called synchronously after the connection is handed over. */
  setHandler(handler: ConnectionHandler): void;
  /**
   * Queues `chunks` as one unit (one or more whole frames; a transport may send them in one
   * message, so the unit must fit the peer's message limit: callers put at most one
   * BufferResponse, or a bounded batch of small control frames, in one call). `onWritten` runs once they left the process or the connection failed (then with
   * the error); buffers referenced by `chunks` must stay untouched until then. Returns false
   * when the send buffer is above its high-water mark: stop writing until `onDrain`.
   */
  write(chunks: readonly Uint8Array[], onWritten?: (error?: Error | null) => void): boolean;
  /** True while the send buffer is below its high-water mark. */
  isWritable(): boolean;
  /**
   * Optional: holds the `write()`s that follow until {@link TransportConnection.uncork}, so that
   * the frames of one write turn leave in one system call (a stream transport's writev) rather
   * than one each. Calls nest; each `write()` stays a unit of its own for the peer.
   */
  cork?(): void;
  /** Sends what was written since the matching {@link TransportConnection.cork}. */
  uncork?(): void;
  /**
   * Stops delivering `onData` until `resume()`: the transport stops reading the socket, so what
   * the peer sends backs up into its own buffers (flow control, as a paused Node stream). The
   * data server pauses a peer that does not read its replies. Idempotent.
   */
  pause(): void;
  /** Delivers `onData` again after `pause()`. Idempotent. */
  resume(): void;
  /** Graceful close: queued data is sent first. Idempotent. */
  close(): void;
  /** Abortive close: drops queued data; `onClose` gets `cause`. Idempotent. */
  destroy(cause?: Error): void;
}

/** A listening data server. */
export interface TransportServer {
  /** The bound port (useful with port 0). */
  readonly port: number;
  readonly host: string;
  /** Stops accepting and abortively closes every accepted connection (peers see a failure). */
  close(): Promise<void>;
}

/** Options for listening. */
export interface ListenOptions {
  readonly host: string;
  /** 0 = any free port. */
  readonly port: number;
  /** Largest frame a peer may send; transports that have a message limit derive it from this. */
  readonly maxFrameSize: number;
  /** Each accepted connection, already established. */
  readonly onConnection: (connection: TransportConnection) => void;
  /**
   * Receives every error of the listening server after `listen` resolved (accepting a connection
   * failed, e.g. with EMFILE when the process is out of file descriptors). The server keeps
   * listening and accepted connections are unaffected, as with Netty; the callback decides how
   * to report it. Without one, the transport emits a `SluiceTransportWarning` process warning, so
   * such an error is never lost. Must not throw.
   */
  readonly onError?: (error: Error) => void;
}

/** Options for connecting. */
export interface ConnectOptions {
  readonly host: string;
  readonly port: number;
  /** Give up (PartitionConnectionError) after this many milliseconds. */
  readonly connectTimeoutMs: number;
  readonly maxFrameSize: number;
}

/** A byte transport for the network shuffle. */
export interface Transport {
  /** A short name for messages and metrics ("tcp", "ws"). */
  readonly name: string;
  listen(options: ListenOptions): Promise<TransportServer>;
  /** Resolves with an established connection or rejects with PartitionConnectionError. */
  connect(options: ConnectOptions): Promise<TransportConnection>;
}
