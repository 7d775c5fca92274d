import type { Socket } from "node:net";
import type { ConnectionHandler, TransportConnection } from "@sluice/network";

/** How long a graceful close may take before the socket is destroyed. */
const CLOSE_GRACE_MS = 5_000;

/** Size of the read buffer a client connection reuses for every socket read. */
export const READ_BUFFER_BYTES = 64 * 1024;

/**
 * Where a socket created with Node's `onread` option delivers its reads: into one buffer the
 * connection reuses, instead of a new Buffer per read. At hundreds of MB/s the per-read buffers
 * were the consumer's main source of garbage. Safe because the handler copies what it keeps
 * before `onData` returns (the decoder retains no chunk).
 */
export class ReusedReadBuffer {
  /** The memory every read lands in; pass as `onread.buffer`. */
  readonly buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  private connection: TcpConnection | undefined;
  /** Reads that arrived before the connection existed (copied: the buffer is reused). */
  private readonly early: Buffer[] = [];

  /** Pass as `onread.callback`. */
  readonly callback = (bytesRead: number, buffer: Uint8Array): boolean => {
    const chunk = (buffer as Buffer).subarray(0, bytesRead);
    if (this.connection === undefined) this.early.push(Buffer.from(chunk));
    else this.connection.onRead(chunk);
    return true;
  };

  /** Delivers reads to `connection` from now on. */
  attach(connection: TcpConnection): void {
    this.connection = connection;
  }

  /** The reads that arrived before {@link attach}, once. */
  takeEarly(): Buffer[] {
    return this.early.splice(0);
  }
}

/**
 * A TransportConnection over a node:net (or node:tls) socket. Frames are written with
 * cork/uncork so a BufferResponse header and its payload view leave in one writev, without
 * copying the payload.
 */
export class TcpConnection implements TransportConnection {
  readonly remoteAddress: string;
  private readonly socket: Socket;
  private handler: ConnectionHandler | undefined;
  private closeCause: Error | undefined;
  private closedBeforeHandler = false;
  private socketError: Error | undefined;

  private readonly reusedRead: ReusedReadBuffer | undefined;
  /** Reads delivered before the handler was set (only with a reused read buffer). */
  private pendingReads: Buffer[] = [];

  /**
   * @param reusedRead - the read buffer the socket was created with (`onread`), if any; reads
   *   then arrive through it instead of `'data'` events.
   */
  constructor(socket: Socket, remoteAddress?: string, reusedRead?: ReusedReadBuffer) {
    this.socket = socket;
    this.reusedRead = reusedRead;
    if (reusedRead !== undefined) {
      this.pendingReads = reusedRead.takeEarly();
      reusedRead.attach(this);
    }
    this.remoteAddress = remoteAddress ?? `${socket.remoteAddress}:${socket.remotePort}`;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 10_000);
    socket.on("error", (error) => {
      this.socketError ??= error;
    });
    socket.once("close", (hadError) => {
      // A cause given to destroy() wins over the socket error it may have provoked.
      const cause =
        this.closeCause ?? (hadError ? this.socketError : undefined) ?? this.socketError;
      if (this.handler === undefined) {
        this.closedBeforeHandler = true;
        this.closeCause = cause;
        return;
      }
      this.handler.onClose(cause);
    });
  }

  setHandler(handler: ConnectionHandler): void {
    this.handler = handler;
    if (this.reusedRead === undefined) {
      // Attaching the 'data' listener starts the flow: nothing can arrive before the handler.
      this.socket.on("data", (chunk: Buffer) => handler.onData(chunk));
    } else {
      const early = this.pendingReads;
      this.pendingReads = [];
      for (const chunk of early) handler.onData(chunk);
    }
    this.socket.on("drain", () => handler.onDrain());
    if (this.closedBeforeHandler) handler.onClose(this.closeCause);
  }

  /** A read of a socket created with a {@link ReusedReadBuffer}; `chunk` is valid during the call. */
  onRead(chunk: Buffer): void {
    const handler = this.handler;
    if (handler === undefined) this.pendingReads.push(Buffer.from(chunk));
    else handler.onData(chunk);
  }

  write(chunks: readonly Uint8Array[], onWritten?: (error?: Error | null) => void): boolean {
    const socket = this.socket;
    if (socket.destroyed || !socket.writable) {
      if (onWritten !== undefined) {
        queueMicrotask(() => onWritten(this.socketError ?? new Error("connection closed")));
      }
      return false;
    }
    let ok = true;
    if (chunks.length === 1) {
      ok = socket.write(chunks[0] as Uint8Array, onWritten);
    } else {
      socket.cork();
      const last = chunks.length - 1;
      for (let i = 0; i < last; i++) socket.write(chunks[i] as Uint8Array);
      ok = socket.write(chunks[last] as Uint8Array, onWritten);
      socket.uncork();
    }
    return ok;
  }

  /**
   * Corks the socket for the data server's write turn: the turn's frames leave in one writev
   * (plaintext) or one run of TLS records instead of one system call per frame.
   */
  cork(): void {
    this.socket.cork();
  }

  uncork(): void {
    this.socket.uncork();
  }

  isWritable(): boolean {
    return !this.socket.destroyed && this.socket.writable && !this.socket.writableNeedDrain;
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    if (!this.socket.destroyed) this.socket.resume();
  }

  close(): void {
    if (this.socket.destroyed) return;
    this.socket.end();
    setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  destroy(cause?: Error): void {
    if (this.socket.destroyed) return;
    this.closeCause = cause;
    this.socket.destroy();
  }
}
