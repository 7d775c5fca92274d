import type { Socket } from "node:net";
import {
  type ConnectionHandler,
  keepAliveDelayFor,
  type ReusedReadBuffer,
  type TransportConnection,
} from "@sluice/network/plugin";
import { HeartbeatManagerOptions } from "@sluice/runtime-api";

/** The keepalive idle time for the default `heartbeat.timeout`. */
export const DEFAULT_KEEP_ALIVE_DELAY_MS = keepAliveDelayFor(
  HeartbeatManagerOptions.HEARTBEAT_TIMEOUT.defaultValue,
);

/** How long a graceful close may take before the socket is destroyed. */
const CLOSE_GRACE_MS = 5_000;

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
   * @param reads - the read buffer the socket was created with (`onread`), if any, and copies of
   *   the reads it took before this connection existed; reads then arrive through it instead of
   *   `'data'` events.
   * @param keepAliveDelayMs - TCP keepalive's idle time (`keepAliveDelayFor` of the worker's
   *   `heartbeat.timeout`; default that of its default): a peer that vanished without closing is
   *   noticed this long plus libuv's ten one-second probes after the connection went quiet.
   */
  constructor(
    socket: Socket,
    remoteAddress?: string,
    reads?: { readonly reusedRead: ReusedReadBuffer; readonly early: Buffer[] },
    keepAliveDelayMs: number = DEFAULT_KEEP_ALIVE_DELAY_MS,
  ) {
    this.socket = socket;
    this.reusedRead = reads?.reusedRead;
    if (reads !== undefined) {
      this.pendingReads = reads.early.splice(0);
      reads.reusedRead.setHandler((chunk) => this.onRead(chunk));
    }
    this.remoteAddress = remoteAddress ?? `${socket.remoteAddress}:${socket.remotePort}`;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, keepAliveDelayMs);
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

  /** A read of a socket created with a ReusedReadBuffer; `chunk` is valid during the call. */
  private onRead(chunk: Buffer): void {
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
