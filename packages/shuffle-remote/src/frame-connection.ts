import { ProtocolError } from "@sluice/core";
import type { ConnectionHandler, TransportConnection } from "@sluice/network";

/**
 * The message types of the remote shuffle's own protocol, spoken between shuffle workers, the
 * shuffle manager (in the job manager's ShuffleMaster), producers and consumers. Data reads do
 * not use it: consumers read stored partitions with the network shuffle's credit-based protocol.
 */
export const FrameType = {
  /** worker → manager: JSON {@link WorkerRegistration}. */
  REGISTER: 1,
  /** worker → manager: JSON `{ partitions }`, every heartbeat interval. */
  HEARTBEAT: 2,
  /** manager → worker: JSON `{ partitionIds }`, the job side released them. */
  RELEASE: 3,
  /** producer → worker: JSON `{ descriptor, incarnation }`, opens a push session. */
  OPEN: 10,
  /** worker → producer: JSON `{ credit }`, bytes the producer may have in flight. */
  OPENED: 11,
  /** producer → worker: a u32 subpartition index, then whole framed records. */
  DATA: 12,
  /** worker → producer: a u32 count of bytes stored; returns that much credit. */
  ACK: 13,
  /** producer → worker: a serialized runtime event, broadcast to every subpartition. */
  EVENT: 14,
  /** producer → worker: JSON `{ checksums }`, the end of the partition's data. */
  FINISH: 15,
  /** worker → producer: JSON `{}`, the partition is stored completely. */
  FINISHED: 16,
  /** consumer → worker: JSON `{ id, partitionId }`, asks for a stored partition's checksums. */
  STAT: 20,
  /** worker → consumer: JSON `{ id, incarnation, checksums? }`. */
  STAT_REPLY: 21,
  /** either way: JSON `{ code, name, message }`; the sender closes the connection after it. */
  ERROR: 30,
} as const;

/** Bytes of a frame's header: the u32 length of what follows, then the u8 type. */
const HEADER = 5;

/** Receives the frames of one {@link FrameConnection}. */
export interface FrameHandler {
  /** One whole frame; `payload` is a copy the handler may keep. */
  onFrame(type: number, payload: Buffer): void;
  /** The connection closed; `cause` when it did not close cleanly. Called once. */
  onClose(cause: Error | undefined): void;
  /** The send buffer drained after a write returned false. */
  onDrain?(): void;
}

/**
 * Length-prefixed frames over a transport connection (TCP, with TLS when
 * `security.ssl.internal.enabled`): a u32 big-endian length, a u8 type, the payload. Frames larger
 * than `maxFrameSize` are a protocol violation and close the connection.
 */
export class FrameConnection {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private closed = false;

  constructor(
    readonly connection: TransportConnection,
    private readonly handler: FrameHandler,
    private readonly maxFrameSize: number,
  ) {
    const connectionHandler: ConnectionHandler = {
      onData: (chunk) => this.onData(chunk),
      onDrain: () => this.handler.onDrain?.(),
      onClose: (cause) => {
        this.closed = true;
        this.handler.onClose(cause);
      },
    };
    connection.setHandler(connectionHandler);
  }

  /** `host:port` of the peer. */
  get remoteAddress(): string {
    return this.connection.remoteAddress;
  }

  /** True once the connection closed. */
  isClosed(): boolean {
    return this.closed;
  }

  /** Sends one frame; false when the send buffer is full (wait for `onDrain`). */
  send(type: number, ...payload: Uint8Array[]): boolean {
    if (this.closed) return false;
    let length = 1;
    for (const part of payload) length += part.byteLength;
    const header = Buffer.allocUnsafe(HEADER);
    header.writeUInt32BE(length, 0);
    header.writeUInt8(type, 4);
    return this.connection.write([header, ...payload]);
  }

  /** Sends one frame with a JSON payload. */
  sendJson(type: number, message: unknown): boolean {
    return this.send(type, Buffer.from(JSON.stringify(message), "utf8"));
  }

  /** Sends an ERROR frame and closes the connection once it left. */
  sendErrorAndClose(error: { code?: string; name?: string; message: string }): void {
    this.sendJson(FrameType.ERROR, {
      code: error.code ?? "SLUICE_ERR_UNKNOWN",
      name: error.name ?? "Error",
      message: error.message,
    });
    this.connection.close();
  }

  pause(): void {
    this.connection.pause();
  }

  resume(): void {
    this.connection.resume();
  }

  close(): void {
    this.connection.close();
  }

  destroy(cause?: Error): void {
    this.connection.destroy(cause);
  }

  private onData(chunk: Buffer): void {
    // The transport may reuse `chunk`'s memory after this call: keep a copy.
    this.pending.push(Buffer.from(chunk));
    this.pendingBytes += chunk.byteLength;
    while (this.pendingBytes >= HEADER && !this.closed) {
      const head = this.peek(HEADER);
      const length = head.readUInt32BE(0);
      if (length < 1 || length > this.maxFrameSize) {
        this.destroy(
          new ProtocolError(
            `remote shuffle frame of ${length} bytes from ${this.remoteAddress} is outside [1, ${this.maxFrameSize}]`,
          ),
        );
        return;
      }
      if (this.pendingBytes < 4 + length) return;
      const frame = this.take(4 + length);
      this.handler.onFrame(frame.readUInt8(4), frame.subarray(HEADER));
    }
  }

  private peek(bytes: number): Buffer {
    const first = this.pending[0] as Buffer;
    if (first.byteLength >= bytes) return first;
    const joined = Buffer.concat(this.pending);
    this.pending = [joined];
    return joined;
  }

  private take(bytes: number): Buffer {
    const joined = this.peek(bytes);
    const frame = joined.subarray(0, bytes);
    const rest = joined.subarray(bytes);
    this.pending = rest.byteLength > 0 ? [rest] : [];
    this.pendingBytes -= bytes;
    return frame;
  }
}

/** Parses a JSON frame payload; a malformed one is a protocol violation. */
export function parseJsonPayload<T>(payload: Buffer, from: string): T {
  try {
    return JSON.parse(payload.toString("utf8")) as T;
  } catch (error) {
    throw new ProtocolError(`malformed remote shuffle message from ${from}`, { cause: error });
  }
}
