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
  /** worker → manager: JSON `{ partitions, storage }`, every heartbeat interval. */
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

/**
 * Largest frame of the remote shuffle's own protocol: a DATA frame holds at least one record, up
 * to `taskmanager.network.max-record-size` (512 MiB by default).
 */
export const MAX_FRAME_SIZE = 512 * 1024 * 1024 + 64;

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
   * connection's reassembly buffer): a handler that keeps it copies it.
   */
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

  /**
   * A frame that lies whole in `chunk` is handed over as a view of it, without a copy (the
   * common case: a read holds several frames of one segment each). Only a frame that spans reads
   * is copied, once, into the reassembly buffer. Views are valid during the handler's call only:
   * the transport may reuse `chunk`'s memory after this call.
   */
  private onData(chunk: Buffer): void {
    let offset = 0;
    const end = chunk.byteLength;
    while (offset < end && !this.closed) {
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
          if (this.headerFill < HEADER) return;
          this.headerFill = 0;
          length = this.header.readUInt32BE(0);
          type = this.header[4] as number;
        }
        if (length < 1 || length > this.maxFrameSize) {
          this.destroy(
            new ProtocolError(
              `remote shuffle frame of ${length} bytes from ${this.remoteAddress} is outside [1, ${this.maxFrameSize}]`,
            ),
          );
          return;
        }
        const size = length - 1;
        if (end - offset >= size) {
          offset += size;
          this.handler.onFrame(type, chunk.subarray(offset - size, offset));
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
        this.handler.onFrame(this.payloadType, payload);
      }
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
}

/** Parses a JSON frame payload; a malformed one is a protocol violation. */
export function parseJsonPayload<T>(payload: Buffer, from: string): T {
  try {
    return JSON.parse(payload.toString("utf8")) as T;
  } catch (error) {
    throw new ProtocolError(`malformed remote shuffle message from ${from}`, { cause: error });
  }
}
