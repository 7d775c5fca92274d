import {
  isSluiceError,
  LimitExceededError,
  ProtocolError,
  type SluiceError,
  TimeoutError,
} from "@sluice/core";
import {
  type ConnectionHandler,
  type DeadlineAfterPoll,
  deadlineAfterPoll,
  type TransportConnection,
} from "@sluice/network/plugin";
import { FrameType, frameTypeName } from "./remote-shuffle-messages.js";

/**
 * Largest frame a client of the remote shuffle accepts from the servers it chose to connect to,
 * and the cap of a push session's frames: a DATA frame holds at least one record, up to
 * `taskmanager.network.max-record-size` (at most 2 GiB - 1), plus its headers.
 */
export const MAX_FRAME_SIZE = 0x7fffffff;

/** Bytes of a frame's header: the u32 length of what follows, then the u8 type. */
const HEADER = 5;

/**
 * The largest payload reassembled in the connection's reused buffer: DATA frames (a segment of
 * records) fit it many times over; a larger one, a frame of one huge record, gets a buffer of its
 * own that is dropped after its call.
 */
const MAX_REUSED_PAYLOAD = 1024 * 1024;

/** Receives the frames of one {@link FrameConnection}. */
export interface FrameHandler {
  /**
   * One whole frame. `payload` is valid only during the call (a view of the read, or of the
   * connection's reassembly buffer): a handler that keeps it copies it. A handler that throws
   * refuses the frame: the peer gets an ERROR frame with the error's code (a SluiceError's, or
   * `SLUICE_ERR_PROTOCOL`) and only this connection is closed.
   */
  onFrame(type: number, payload: Buffer): void;
  /** The connection closed; `cause` when it did not close cleanly. Called once. */
  onClose(cause: Error | undefined): void;
  /** The send buffer drained after a write returned false. */
  onDrain?(): void;
  /**
   * The connection refused the peer (a frame the handler refused, a limit, a timeout) and is
   * closing: what the handler holds for it can go now, before the socket is closed.
   */
  onRefused?(error: Error): void;
}

/** The bounds of one connection; see `remote-shuffle.rpc.*` in docs/configuration.md. */
export interface FrameConnectionLimits {
  /** Largest frame accepted, checked on the length before anything is allocated. */
  readonly maxFrameSize: number;
  /** What `maxFrameSize` is, for the refusal (e.g. the key). */
  readonly maxFrameSizeSource?: string;
  /** A frame whose first bytes arrived must be complete within this long. Absent: no limit. */
  readonly frameReadTimeoutMs?: number;
  /**
   * Bytes of replies held for a peer that does not take them: at the budget the connection
   * stops reading until half of it drained, beyond twice the budget it is closed. Absent: none
   * (a client that chose its server).
   */
  readonly maxOutboundBytes?: number;
}

/**
 * Length-prefixed frames over a transport connection (TCP, with TLS when
 * `security.ssl.internal.enabled`): a u32 big-endian length, a u8 type, the payload.
 *
 * It bounds what a peer can make the receiver hold, as the network shuffle's data server does:
 * every length is checked before anything is allocated; a frame that started must complete
 * within the frame-read timeout, and a connection that owes a frame (registration, the next
 * query) must send it within its idle timeout (time while the receiver itself stopped reading
 * counts for neither); replies count against an outbound budget; what a handler refuses is
 * answered with an ERROR frame and closes this connection only. Nothing a peer sends escapes as an
 * exception.
 */
export class FrameConnection {
  /** The header being read across reads: a u32 length and a u8 type. */
  private readonly header = Buffer.alloc(HEADER);
  private headerFill = 0;
  /** The payload being reassembled across reads (a prefix of `reassembly`, or its own buffer). */
  private payload: Buffer | undefined;
  private payloadFill = 0;
  private payloadType = 0;
  /** Reused for payloads up to {@link MAX_REUSED_PAYLOAD} that span reads; grown on demand. */
  private reassembly: Buffer | undefined;
  private closed = false;
  /** Set once the connection refused a frame or timed out: what arrives later is ignored. */
  private refused = false;
  private handler: FrameHandler | undefined;
  private maxFrameSize: number;
  private maxFrameSizeSource: string | undefined;
  /** Reading stopped by the owner (back-pressure) or by the outbound budget. */
  private pausedByOwner = false;
  private pausedByBudget = false;
  /** Input read while paused, or after a pause in the middle of a read; copied. */
  private pending: Buffer[] = [];
  private outboundBytes = 0;
  /** performance.now() when the frame being read started; -1 at a frame boundary. */
  private frameStartedAt = -1;
  /** performance.now() of the last whole frame (or of the idle timeout's start). */
  private lastFrameAt = performance.now();
  private idleTimeoutMs: number | undefined;
  private idleReason = "";
  /** The one timer of this connection's deadlines, re-armed for the nearest. */
  private watchdog: DeadlineAfterPoll | undefined;

  /**
   * @param handler - the frames' receiver, or a function that makes it for this connection
   *   (called once, before any frame can arrive).
   */
  constructor(
    readonly connection: TransportConnection,
    handler: FrameHandler | ((frames: FrameConnection) => FrameHandler),
    private readonly limits: FrameConnectionLimits,
  ) {
    this.maxFrameSize = limits.maxFrameSize;
    this.maxFrameSizeSource = limits.maxFrameSizeSource;
    const connectionHandler: ConnectionHandler = {
      onData: (chunk) => this.onData(chunk),
      onDrain: () => this.handler?.onDrain?.(),
      onClose: (cause) => this.onTransportClose(cause),
    };
    this.handler = typeof handler === "function" ? handler(this) : handler;
    connection.setHandler(connectionHandler);
    this.armWatchdog();
  }

  /** `host:port` of the peer. */
  get remoteAddress(): string {
    return this.connection.remoteAddress;
  }

  /** True once the connection closed. */
  isClosed(): boolean {
    return this.closed;
  }

  /** Bytes sent and not yet taken by the socket. */
  get queuedOutboundBytes(): number {
    return this.outboundBytes;
  }

  /** True while the connection does not read (the owner paused it, or its budget is used). */
  isReadingPaused(): boolean {
    return this.pausedByOwner || this.pausedByBudget;
  }

  /** The largest frame accepted from now on, and what sets it (for the refusal). */
  setMaxFrameSize(bytes: number, source: string): void {
    this.maxFrameSize = bytes;
    this.maxFrameSizeSource = source;
  }

  /**
   * Closes the connection with `SLUICE_ERR_TIMEOUT` when no whole frame arrives for `ms` from
   * now on, with `reason` saying what the peer owed; `undefined` turns the timeout off.
   */
  setIdleTimeout(ms: number | undefined, reason = ""): void {
    this.idleTimeoutMs = ms;
    this.idleReason = reason;
    this.lastFrameAt = performance.now();
    this.armWatchdog();
  }

  /** Sends one frame; false when the send buffer is full (wait for `onDrain`). */
  send(type: number, ...payload: Uint8Array[]): boolean {
    if (this.closed) return false;
    let length = 1;
    for (const part of payload) length += part.byteLength;
    const header = Buffer.allocUnsafe(HEADER);
    header.writeUInt32BE(length, 0);
    header.writeUInt8(type, 4);
    const budget = this.limits.maxOutboundBytes;
    if (budget === undefined) return this.connection.write([header, ...payload]);
    const bytes = HEADER - 1 + length;
    this.outboundBytes += bytes;
    const writable = this.connection.write([header, ...payload], () => this.written(bytes));
    if (this.outboundBytes > 2 * budget) {
      this.destroy(
        new LimitExceededError(
          `${this.remoteAddress} does not take its replies: ${this.outboundBytes} bytes wait for it, more than twice 'remote-shuffle.rpc.max-outbound-bytes-per-connection' (${budget} bytes); connection closed`,
        ),
      );
    } else if (this.outboundBytes > budget && !this.pausedByBudget) {
      this.pausedByBudget = true;
      this.connection.pause();
    }
    return writable;
  }

  /** Sends one frame with a JSON payload. */
  sendJson(type: number, message: unknown): boolean {
    return this.send(type, Buffer.from(JSON.stringify(message), "utf8"));
  }

  /**
   * Refuses the connection: an ERROR frame with `error`'s code (`SLUICE_ERR_PROTOCOL` for an
   * error without one), then a graceful close. Nothing the peer sends afterwards is handled.
   */
  refuse(error: Error): void {
    if (this.refused || this.closed) return;
    this.refused = true;
    this.watchdog?.clear();
    this.pending = [];
    const coded: SluiceError = isSluiceError(error)
      ? error
      : new ProtocolError(`could not handle what ${this.remoteAddress} sent: ${error.message}`, {
          cause: error,
        });
    this.sendJson(FrameType.ERROR, {
      code: coded.code,
      name: coded.name,
      message: coded.message.slice(0, 16 * 1024),
    });
    this.connection.close();
    this.handler?.onRefused?.(coded);
  }

  /** Stops reading (back-pressure): what the peer sends backs up into its own buffers. */
  pause(): void {
    if (this.pausedByOwner) return;
    this.pausedByOwner = true;
    this.connection.pause();
  }

  /** Reads again after {@link FrameConnection.pause}. */
  resume(): void {
    if (!this.pausedByOwner) return;
    this.pausedByOwner = false;
    this.resumeIfUnpaused();
  }

  close(): void {
    this.watchdog?.clear();
    this.connection.close();
  }

  destroy(cause?: Error): void {
    this.refused = true;
    this.watchdog?.clear();
    this.connection.destroy(cause);
  }

  private written(bytes: number): void {
    this.outboundBytes -= bytes;
    const budget = this.limits.maxOutboundBytes as number;
    if (this.pausedByBudget && this.outboundBytes <= budget / 2) {
      this.pausedByBudget = false;
      this.resumeIfUnpaused();
    }
  }

  private resumeIfUnpaused(): void {
    if (this.isReadingPaused() || this.closed) return;
    // Time spent paused was the receiver's, not the peer's.
    this.lastFrameAt = performance.now();
    if (this.frameStartedAt >= 0) this.frameStartedAt = this.lastFrameAt;
    if (this.pending.length === 0) {
      this.connection.resume();
      return;
    }
    // What was read before the pause goes first, on a fresh turn; the socket is read again only
    // once it is consumed, so input held here never exceeds what arrived around one pause.
    setImmediate(() => this.feedPending());
  }

  private feedPending(): void {
    while (this.pending.length > 0 && !this.isReadingPaused() && !this.refused) {
      const chunk = this.pending.shift() as Buffer;
      this.feed(chunk);
    }
    if (this.pending.length === 0 && !this.isReadingPaused() && !this.refused) {
      this.connection.resume();
    }
  }

  private onTransportClose(cause: Error | undefined): void {
    this.closed = true;
    this.watchdog?.clear();
    this.pending = [];
    this.handler?.onClose(cause);
  }

  private onData(chunk: Buffer): void {
    if (this.refused || this.closed) return;
    if (this.isReadingPaused() || this.pending.length > 0) {
      // A transport may deliver what it had read before it was paused; `chunk` is reused later.
      this.pending.push(Buffer.from(chunk));
      return;
    }
    this.feed(chunk);
  }

  /**
   * A frame that lies whole in `chunk` is handed over as a view of it, without a copy (the
   * common case: a read holds several frames of one segment each). Only a frame that spans reads
   * is copied, once, into the reassembly buffer. Views are valid during the handler's call only:
   * the transport may reuse `chunk`'s memory after this call. When a frame's handler paused
   * reading, the rest of `chunk` is kept (copied) until reading resumes.
   */
  private feed(chunk: Buffer): void {
    let offset = 0;
    const end = chunk.byteLength;
    while (offset < end && !this.refused && !this.closed) {
      if (this.isReadingPaused()) {
        this.pending.unshift(Buffer.from(chunk.subarray(offset)));
        return;
      }
      let payload = this.payload;
      if (payload === undefined) {
        let length: number;
        let type: number;
        if (this.headerFill === 0 && end - offset >= HEADER) {
          length = chunk.readUInt32BE(offset);
          type = chunk[offset + 4] as number;
          offset += HEADER;
        } else {
          const n = Math.min(HEADER - this.headerFill, end - offset);
          chunk.copy(this.header, this.headerFill, offset, offset + n);
          this.headerFill += n;
          offset += n;
          if (this.headerFill < HEADER) {
            this.frameStarted();
            return;
          }
          this.headerFill = 0;
          length = this.header.readUInt32BE(0);
          type = this.header[4] as number;
        }
        if (length < 1 || length > this.maxFrameSize) {
          const source =
            this.maxFrameSizeSource === undefined ? "" : ` (${this.maxFrameSizeSource})`;
          this.refuse(
            new ProtocolError(
              `a remote shuffle frame (${frameTypeName(type)}) of ${length} bytes from ${this.remoteAddress} is outside [1, ${this.maxFrameSize}]${source}; connection closed`,
            ),
          );
          return;
        }
        const size = length - 1;
        if (end - offset >= size) {
          offset += size;
          this.dispatch(type, chunk.subarray(offset - size, offset));
          continue;
        }
        payload = this.payloadBuffer(size);
        this.payload = payload;
        this.payloadFill = 0;
        this.payloadType = type;
      }
      const n = Math.min(payload.byteLength - this.payloadFill, end - offset);
      chunk.copy(payload, this.payloadFill, offset, offset + n);
      this.payloadFill += n;
      offset += n;
      if (this.payloadFill === payload.byteLength) {
        this.payload = undefined;
        this.dispatch(this.payloadType, payload);
      }
    }
    if (this.payload !== undefined || this.headerFill > 0) this.frameStarted();
  }

  private frameStarted(): void {
    if (this.frameStartedAt < 0) this.frameStartedAt = performance.now();
  }

  private dispatch(type: number, payload: Buffer): void {
    this.frameStartedAt = -1;
    this.lastFrameAt = performance.now();
    try {
      this.handler?.onFrame(type, payload);
    } catch (error) {
      this.refuse(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** A buffer of exactly `size` bytes to reassemble a payload in. */
  private payloadBuffer(size: number): Buffer {
    if (size > MAX_REUSED_PAYLOAD) return Buffer.allocUnsafe(size);
    let reassembly = this.reassembly;
    if (reassembly === undefined || reassembly.byteLength < size) {
      // Room for the largest payload seen so far, at least a segment's worth.
      reassembly = Buffer.allocUnsafeSlow(Math.max(size, 64 * 1024));
      this.reassembly = reassembly;
    }
    return reassembly.subarray(0, size);
  }

  // ------------------------------------------------------------------------------ timeouts

  /** One timer per connection, for the nearest deadline; unref'd, never keeps a process alive. */
  private armWatchdog(): void {
    this.watchdog?.clear();
    if (this.closed || this.refused) return;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    const frameRead = this.limits.frameReadTimeoutMs;
    if (frameRead !== undefined) {
      next = this.frameStartedAt >= 0 ? this.frameStartedAt + frameRead - now : frameRead;
    }
    if (this.idleTimeoutMs !== undefined) {
      next = Math.min(next, this.lastFrameAt + this.idleTimeoutMs - now);
    }
    if (next === Number.POSITIVE_INFINITY) return;
    // Judged in the check phase, after the poll phase read what the peer sent during a stall of
    // this event loop: bytes that arrived in time count.
    this.watchdog = deadlineAfterPoll(next, () => this.checkTimeouts());
  }

  private checkTimeouts(): void {
    if (this.closed || this.refused) return;
    const now = performance.now();
    if (this.isReadingPaused()) {
      // The receiver stopped reading, not the peer: the peer's time starts again on resume.
      this.lastFrameAt = now;
      if (this.frameStartedAt >= 0) this.frameStartedAt = now;
    }
    const frameRead = this.limits.frameReadTimeoutMs;
    if (frameRead !== undefined && this.frameStartedAt >= 0) {
      const waited = now - this.frameStartedAt;
      if (waited >= frameRead) {
        this.refuse(
          new TimeoutError(
            `a frame from ${this.remoteAddress} started ${Math.round(waited)} ms ago and is still incomplete (limit ${frameRead} ms, 'remote-shuffle.rpc.frame-read-timeout'); connection closed`,
          ),
        );
        return;
      }
    }
    const idle = this.idleTimeoutMs;
    if (idle !== undefined && this.frameStartedAt < 0 && now - this.lastFrameAt >= idle) {
      this.refuse(
        new TimeoutError(
          `${this.remoteAddress} ${this.idleReason || "sent nothing"} within ${idle} ms; connection closed`,
        ),
      );
      return;
    }
    this.armWatchdog();
  }
}
