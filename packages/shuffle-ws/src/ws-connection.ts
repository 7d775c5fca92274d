import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import {
  LocalTransportError,
  ProtocolError,
  RemoteTransportError,
  TimeoutError,
} from "@sluice/core";
import type {
  ConnectionHandler,
  ReusedReadBuffer,
  TransportConnection,
} from "@sluice/network/plugin";
import { type RawData, WebSocket } from "ws";
import { frameHeader } from "./ws-frame-header.js";
import { WsFrameReader } from "./ws-frame-reader.js";

/** How long a graceful close may take before the socket is terminated (as TcpConnection). */
const CLOSE_GRACE_MS = 5_000;

/**
 * Chunks shorter than this are copied together into one fragment when they are adjacent; longer
 * ones go out as their own fragment, uncopied. A batch of small control frames (the client
 * flushes all pending credit announcements in one write) would otherwise become one WebSocket
 * fragment each: a frame header and a socket write per 30-byte frame, and past ws' default of
 * 16,384 fragments per message the receiver closes the connection (1008).
 */
const COALESCE_BELOW = 4 * 1024;

/**
 * Close codes that end a connection cleanly: 1000 (normal), 1001 (going away: the peer shuts
 * down in order, what TCP sees as a FIN) and 1005 (a close frame without a status code, still a
 * completed closing handshake). Every other code — 1006 (no close frame: the socket died), 1009
 * (message too big), 1002/1007/1008 (protocol/policy), 1011 (peer error) — is a failure.
 */
const CLEAN_CLOSE_CODES: ReadonlySet<number> = new Set([1000, 1001, 1005]);

const CLOSE_CODE_NAMES: Readonly<Record<number, string>> = {
  1000: "normal closure",
  1001: "going away",
  1002: "protocol error",
  1003: "unsupported data",
  1005: "no status received",
  1006: "abnormal closure, no close frame",
  1007: "invalid payload data",
  1008: "policy violation",
  1009: "message too big",
  1010: "mandatory extension",
  1011: "internal error",
  1012: "service restart",
  1013: "try again later",
  1015: "TLS handshake failed",
};

/**
 * The close code ws sends when its receiver rejects what the peer sent (the `WS_ERR_*` code of
 * the error; everything else is 1002, protocol error). The local 'close' event then reports 1006
 * because ws does not wait for the peer's answer, so messages name the code that was sent.
 */
const WS_ERROR_CLOSE_CODES: Readonly<Record<string, number>> = {
  WS_ERR_UNSUPPORTED_MESSAGE_LENGTH: 1009,
  WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH: 1009,
  WS_ERR_TOO_MANY_BUFFERED_PARTS: 1008,
  WS_ERR_INVALID_UTF8: 1007,
};

const FRAGMENT = { binary: true, fin: false } as const;
const LAST_FRAGMENT = { binary: true, fin: true } as const;

/** Options of a {@link WsConnection}. */
export interface WsConnectionOptions {
  /** `host:port` of the peer, for error messages. */
  readonly remoteAddress: string;
  /** `isWritable()` is false while `bufferedAmount` is at or above this many bytes. */
  readonly highWaterMark: number;
  /**
   * After `write()` or `isWritable()` reported false, `onDrain` fires once a send completes with
   * `bufferedAmount` below this many bytes.
   */
  readonly lowWaterMark: number;
  /**
   * The server side's socket under `ws`. When given, and no extension (permessage-deflate) was
   * negotiated, a write of several chunks goes to it as one unmasked binary frame: the frame
   * header, then the chunks, corked. The receiver then gets each BufferResponse as one message
   * and `ws` joins nothing there (it joins the fragments of a fragmented message into a fresh
   * buffer). `ws` writes its own frames to the same socket without queueing when nothing is
   * compressed, so the order of frames is kept, and its `bufferedAmount` counts the socket's
   * queue, so backpressure still holds. A client must mask its frames and leaves this unset.
   */
  readonly serverSocket?: Duplex;
  /**
   * The client side's socket. When no extension was negotiated and ws holds no bytes yet, a
   * WsFrameReader takes its reads from ws: binary payloads go to the handler as they arrive,
   * everything else still to ws (see WsFrameReader). Otherwise ws keeps reading.
   *
   * A plaintext socket was created to read into `reusedRead`, whose handler until then pushed
   * each read, copied, into the socket's readable side for the HTTP client and ws, as Node does
   * without `onread`; the reader then reads straight from the reused buffer.
   */
  readonly clientReads?: {
    readonly socket: Socket;
    /** Undefined for a TLS socket, which delivers its reads as `'data'` events to ws. */
    readonly reusedRead: ReusedReadBuffer | undefined;
    /** ws' `maxPayload` of the connection. */
    readonly maxPayload: number;
  };
}

/** Describes a close code for messages: `1009 (message too big)`, with the reason if any. */
function describeClose(code: number, reason: string): string {
  const name = CLOSE_CODE_NAMES[code];
  const described = name === undefined ? `${code}` : `${code} (${name})`;
  return reason === "" ? described : `${described}, reason "${reason}"`;
}

/** The `code` of ws' own errors (`WS_ERR_UNSUPPORTED_MESSAGE_LENGTH`, ...), if any. */
function wsErrorCode(error: Error): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

/**
 * A TransportConnection over a `ws` WebSocket (either side), carrying the protocol frames as
 * binary messages: each `write()` is one message.
 *
 * - **No payload copy on send.** The chunks of one `write()` go out as one message without
 *   being joined: on the server side (which sends the data) as one frame written chunk by chunk
 *   to the socket (see {@link WsConnectionOptions.serverSocket}), otherwise as the fragments of
 *   one message (`fin: false` on all but the last, ws' fragmentation). On the server side ws
 *   frames a Buffer without copying it; a client must mask, which copies (and costs CPU): the
 *   producer is therefore the server. Adjacent small chunks are joined (see COALESCE_BELOW).
 * - **Binary payloads as they arrive (client side, no extension).** A WsFrameReader hands them
 *   to the handler read by read, not joined into one Buffer per message; a plaintext socket
 *   reads into one reused buffer, as on the TCP transport (see
 *   {@link WsConnectionOptions.clientReads}). A chunk is then a message or the part of it one
 *   read held; the protocol above never relied on message boundaries.
 * - **Backpressure from `bufferedAmount`.** `ws.send()` returns nothing (ws#2009), so the
 *   writable state is `bufferedAmount < highWaterMark`; once it was reported false, the
 *   completion callback of a later send that sees `bufferedAmount < lowWaterMark` fires
 *   `onDrain`.
 * - **`onClose` exactly once**, with `undefined` only for a clean close (codes 1000, 1001,
 *   1005, or a local `destroy()` without cause); otherwise with an error naming the peer, the
 *   close code and ws' error: a {@link ProtocolError} when the peer broke the WebSocket
 *   protocol or a limit (too large a message, a text message), a {@link RemoteTransportError}
 *   for a connection that died or closed abnormally, a {@link TimeoutError} when our closing
 *   handshake got no answer.
 * - Messages that arrive before `setHandler` are kept and delivered by it: ws emits `'message'`
 *   whether or not anyone listens.
 */
export class WsConnection implements TransportConnection {
  readonly remoteAddress: string;
  private readonly ws: WebSocket;
  private readonly highWaterMark: number;
  private readonly lowWaterMark: number;
  /** Set when whole frames may be written to the socket directly (see `serverSocket`). */
  private readonly frameSocket: Duplex | undefined;
  private handler: ConnectionHandler | undefined;
  /** Messages received before `setHandler`. */
  private pending: Buffer[] | undefined = [];
  /** The first 'error' event of the WebSocket. */
  private wsError: Error | undefined;
  /** Set once `write()`/`isWritable()` reported false; cleared when `onDrain` fires. */
  private needDrain = false;
  private closeRequested = false;
  private closeTimer: NodeJS.Timeout | undefined;
  private closeTimedOut = false;
  private destroyed = false;
  private destroyCause: Error | undefined;
  /** The WebSocket emitted 'close'. */
  private finished = false;
  /** The peer broke the WebSocket framing rules of the protocol; its further messages are dropped. */
  private violated = false;
  /** Computed when 'close' came before `setHandler`; delivered by it. */
  private finishedCause: Error | undefined;

  constructor(ws: WebSocket, options: WsConnectionOptions) {
    this.ws = ws;
    this.remoteAddress = options.remoteAddress;
    this.highWaterMark = options.highWaterMark;
    this.lowWaterMark = options.lowWaterMark;
    // Extensions are settled by the handshake, which is over when a connection is built.
    this.frameSocket = ws.extensions === "" ? options.serverSocket : undefined;
    ws.binaryType = "nodebuffer";
    ws.on("error", (error: Error) => {
      this.wsError ??= error;
    });
    ws.on("message", (data: RawData, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.once("close", (code: number, reason: Buffer) => this.onWsClose(code, reason.toString()));
    const reads = options.clientReads;
    // Bytes that came with the handshake response are queued in the socket for ws: it must
    // read them, and so it keeps the connection's reads.
    if (reads !== undefined && ws.extensions === "" && reads.socket.readableLength === 0) {
      this.readFrames(reads);
    }
  }

  /** Takes the client's reads from ws: binary payloads to the handler, the rest to ws. */
  private readFrames(reads: NonNullable<WsConnectionOptions["clientReads"]>): void {
    const { socket, reusedRead, maxPayload } = reads;
    let toWs: (bytes: Buffer) => void;
    let takeReads: (read: (chunk: Buffer) => void) => void;
    if (reusedRead !== undefined) {
      // Pushed as Node pushes a read: ws' 'data' listener gets the bytes in order, and while ws
      // paused the socket they wait in its buffer.
      toWs = (bytes) => socket.push(bytes);
      takeReads = (read) => reusedRead.setHandler(read);
    } else {
      // A TLS socket hands its reads to 'data' listeners; ws has one, its receiver's input. The
      // reader takes its place and calls it with what ws is to read.
      const listeners = socket.listeners("data");
      if (listeners.length !== 1) return;
      const wsOnData = listeners[0] as (chunk: Buffer) => void;
      toWs = (bytes) => wsOnData.call(socket, bytes);
      takeReads = (read) => {
        socket.removeListener("data", wsOnData);
        socket.on("data", read);
      };
    }
    const reader = new WsFrameReader({
      maxPayload,
      onPayload: (chunk) => this.deliver(chunk, true),
      toWs,
    });
    takeReads((chunk) => reader.read(chunk));
  }

  /** The negotiated extensions (`Sec-WebSocket-Extensions`); empty unless permessage-deflate was agreed. */
  get extensions(): string {
    return this.ws.extensions;
  }

  /** Bytes queued for sending and not yet handed to the kernel (ws' `bufferedAmount`). */
  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  setHandler(handler: ConnectionHandler): void {
    this.handler = handler;
    const pending = this.pending;
    this.pending = undefined;
    if (pending !== undefined) {
      for (const chunk of pending) {
        if (this.destroyed) break;
        handler.onData(chunk);
      }
    }
    if (this.finished) handler.onClose(this.finishedCause);
  }

  write(chunks: readonly Uint8Array[], onWritten?: (error?: Error | null) => void): boolean {
    const ws = this.ws;
    if (this.destroyed || ws.readyState !== WebSocket.OPEN) {
      if (onWritten !== undefined) {
        const error =
          this.wsError ??
          new LocalTransportError(
            `cannot write to ${this.remoteAddress}: the WebSocket connection is closing or closed`,
          );
        queueMicrotask(() => onWritten(error));
      }
      return false;
    }
    const fragments = chunks.length > 1 ? coalesce(chunks) : chunks;
    if (fragments.length === 0) {
      // Nothing to send: still answer asynchronously, as a send would.
      if (onWritten !== undefined) queueMicrotask(() => onWritten(null));
    } else if (fragments.length > 1 && this.frameSocket !== undefined) {
      const socket = this.frameSocket;
      let length = 0;
      for (const fragment of fragments) length += fragment.byteLength;
      const last = fragments.length - 1;
      socket.cork();
      socket.write(frameHeader(length));
      for (let i = 0; i < last; i++) socket.write(fragments[i] as Uint8Array);
      socket.write(fragments[last] as Uint8Array, (error?: Error | null) =>
        this.afterSend(error, onWritten),
      );
      socket.uncork();
    } else {
      const last = fragments.length - 1;
      for (let i = 0; i < last; i++) ws.send(fragments[i] as Uint8Array, FRAGMENT);
      ws.send(fragments[last] as Uint8Array, LAST_FRAGMENT, (error?: Error) =>
        this.afterSend(error, onWritten),
      );
    }
    return this.isWritable();
  }

  /** Corks the server's socket for a write turn (a client sends its writes one by one). */
  cork(): void {
    this.frameSocket?.cork();
  }

  uncork(): void {
    this.frameSocket?.uncork();
  }

  isWritable(): boolean {
    if (this.destroyed || this.ws.readyState !== WebSocket.OPEN) return false;
    if (this.ws.bufferedAmount < this.highWaterMark) return true;
    // Whoever saw `false` waits for onDrain, whether it asked through write() or here.
    this.needDrain = true;
    return false;
  }

  /** ws stops reading the socket; messages it already parsed are still delivered. */
  pause(): void {
    this.ws.pause();
  }

  resume(): void {
    this.ws.resume();
  }

  close(): void {
    if (this.closeRequested || this.destroyed || this.finished) return;
    this.closeRequested = true;
    // The close frame is queued behind the data already sent: queued data goes out first.
    this.ws.close(1000);
    this.closeTimer = setTimeout(() => {
      this.closeTimedOut = true;
      this.ws.terminate();
    }, CLOSE_GRACE_MS);
    this.closeTimer.unref();
  }

  destroy(cause?: Error): void {
    if (this.destroyed || this.finished) return;
    this.destroyed = true;
    this.destroyCause = cause;
    this.ws.terminate();
  }

  private afterSend(
    error: Error | undefined | null,
    onWritten?: (error?: Error | null) => void,
  ): void {
    onWritten?.(error);
    if (
      error == null &&
      this.needDrain &&
      !this.finished &&
      !this.destroyed &&
      this.ws.readyState === WebSocket.OPEN &&
      this.ws.bufferedAmount < this.lowWaterMark
    ) {
      const handler = this.handler;
      if (handler === undefined) return;
      this.needDrain = false;
      handler.onDrain();
    }
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.finished || this.destroyed) return;
    if (this.violated) return;
    if (!isBinary) {
      const error = new ProtocolError(
        `received a text message from ${this.remoteAddress}; the shuffle protocol uses binary messages only`,
      );
      const handler = this.handler;
      if (handler?.onProtocolViolation === undefined) {
        this.destroy(error);
        return;
      }
      // The handler answers (a data server sends the fatal ErrorResponse the docs promise) and
      // closes; whatever the peer sends meanwhile is ignored.
      this.violated = true;
      handler.onProtocolViolation(error);
      return;
    }
    // binaryType is 'nodebuffer': ws hands over one Buffer per message (fragments joined).
    const chunk = Buffer.isBuffer(data)
      ? data
      : Array.isArray(data)
        ? Buffer.concat(data)
        : Buffer.from(data);
    this.deliver(chunk, false);
  }

  /** Hands received bytes to the handler; `reused` bytes are valid only during the call. */
  private deliver(chunk: Buffer, reused: boolean): void {
    if (this.finished || this.destroyed || this.violated) return;
    if (this.handler !== undefined) this.handler.onData(chunk);
    else this.pending?.push(reused ? Buffer.from(chunk) : chunk);
  }

  private onWsClose(code: number, reason: string): void {
    if (this.closeTimer !== undefined) clearTimeout(this.closeTimer);
    this.closeTimer = undefined;
    this.finished = true;
    const cause = this.closeCause(code, reason);
    if (this.handler === undefined) {
      this.finishedCause = cause;
      return;
    }
    this.handler.onClose(cause);
  }

  private closeCause(code: number, reason: string): Error | undefined {
    if (this.destroyed) return this.destroyCause;
    const close = describeClose(code, reason);
    const error = this.wsError;
    if (error !== undefined) {
      const wsCode = wsErrorCode(error);
      if (wsCode?.startsWith("WS_ERR_")) {
        // ws' receiver rejected what the peer sent: a protocol violation or a limit (maxPayload).
        const sent = WS_ERROR_CLOSE_CODES[wsCode] ?? 1002;
        return new ProtocolError(
          `WebSocket connection with ${this.remoteAddress} failed: ${error.message} (${wsCode}); ` +
            `closed it with code ${describeClose(sent, "")}`,
          { cause: error },
        );
      }
      return new RemoteTransportError(
        `WebSocket connection with ${this.remoteAddress} failed: ${error.message}` +
          `${wsCode === undefined ? "" : ` (${wsCode})`}; close code ${close}`,
        { cause: error },
      );
    }
    if (this.closeTimedOut) {
      return new TimeoutError(
        `WebSocket connection with ${this.remoteAddress}: the closing handshake did not finish ` +
          `within ${CLOSE_GRACE_MS} ms, connection terminated (close code ${close})`,
      );
    }
    if (CLEAN_CLOSE_CODES.has(code)) return undefined;
    return new RemoteTransportError(
      `WebSocket connection with ${this.remoteAddress} closed abnormally: close code ${close}`,
    );
  }
}

/**
 * Joins runs of adjacent chunks shorter than COALESCE_BELOW; longer chunks stay as they are (no
 * copy). `[header, payload]` with a segment-sized payload stays two fragments.
 */
function coalesce(chunks: readonly Uint8Array[]): readonly Uint8Array[] {
  let small = 0;
  for (const chunk of chunks) if (chunk.byteLength < COALESCE_BELOW) small++;
  if (small < 2) return chunks;
  const out: Uint8Array[] = [];
  let run: Uint8Array[] = [];
  const flush = () => {
    if (run.length === 1) out.push(run[0] as Uint8Array);
    else if (run.length > 1) out.push(Buffer.concat(run));
    run = [];
  };
  for (const chunk of chunks) {
    if (chunk.byteLength < COALESCE_BELOW) {
      run.push(chunk);
    } else {
      flush();
      out.push(chunk);
    }
  }
  flush();
  return out;
}
