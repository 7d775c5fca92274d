import { Opcode } from "./ws-frame-header.js";

/** Options of a {@link WsFrameReader}. */
export interface WsFrameReaderOptions {
  /**
   * The largest message accepted, as ws' `maxPayload`. A data frame that would take a message
   * past it goes to `ws`, which closes the connection with 1009 (message too big).
   */
  readonly maxPayload: number;
  /** A slice of a binary message's payload, in order; valid only during the call. */
  readonly onPayload: (chunk: Buffer) => void;
  /** Bytes for ws' own receiver, in order; the callee owns them. */
  readonly toWs: (bytes: Buffer) => void;
}

/** The largest payload of a control frame (RFC 6455, section 5.5). */
const MAX_CONTROL_PAYLOAD = 125;

/** The most header bytes kept before the reader decides: 2, plus 8 for a 64-bit length. */
const MAX_HEADER_BYTES = 10;

/**
 * Reads the frames a WebSocket server sends (RFC 6455, section 5.2) from a client socket's reads
 * and hands the payload of binary data frames to `onPayload` as slices of each read, as they
 * arrive. A frame that spans two reads is not joined, and no Buffer is made per message: the
 * consumer's reads can go to one reused buffer (ReusedReadBuffer), as on the TCP transport.
 * `ws` has to keep a read until the frame in it is complete, so it cannot read that way.
 *
 * Everything but well-formed binary data goes to ws' receiver, unchanged and in order, so ws
 * still runs the protocol:
 * - control frames (ping, pong, close), each collected whole; ws answers pings and runs the
 *   closing handshake;
 * - from a close frame on, or from the first frame this reader does not take, every byte. That
 *   covers a text frame (ws delivers it as a text message, which the connection treats as a
 *   protocol violation), a masked frame, RSV bits without an extension, an unknown opcode, a bad
 *   control frame, a continuation out of place and a message over `maxPayload`. ws rejects each
 *   with its usual error and close code.
 *
 * The reader is used only without extensions. permessage-deflate sets RSV1 and leaves its
 * payloads to ws.
 */
export class WsFrameReader {
  private readonly maxPayload: number;
  private readonly onPayload: (chunk: Buffer) => void;
  private readonly toWs: (bytes: Buffer) => void;
  private readonly header = Buffer.alloc(MAX_HEADER_BYTES);
  private headerLength = 0;
  /** Payload bytes of the current frame still to come. */
  private payloadRemaining = 0;
  /** The bytes of the control frame being collected; undefined for a data frame. */
  private control: Buffer[] | undefined;
  /** The current control frame is a close frame. */
  private closing = false;
  /** A binary message is open: its final frame has not come yet. */
  private inMessage = false;
  /** Payload bytes of the open message so far. */
  private messageBytes = 0;
  /** Every byte from here on goes to ws. */
  private handedOver = false;

  constructor(options: WsFrameReaderOptions) {
    this.maxPayload = options.maxPayload;
    this.onPayload = options.onPayload;
    this.toWs = options.toWs;
  }

  /** Reads `chunk`, one read of the socket; it is not kept after the call. */
  read(chunk: Buffer): void {
    const end = chunk.length;
    let offset = 0;
    while (offset < end) {
      if (this.handedOver) {
        this.toWs(Buffer.from(chunk.subarray(offset)));
        return;
      }
      if (this.payloadRemaining > 0) {
        const n = Math.min(this.payloadRemaining, end - offset);
        const slice = chunk.subarray(offset, offset + n);
        offset += n;
        this.payloadRemaining -= n;
        if (this.control === undefined) {
          this.onPayload(slice);
        } else {
          this.control.push(Buffer.from(slice));
          if (this.payloadRemaining === 0) this.endControlFrame();
        }
        continue;
      }
      this.header[this.headerLength++] = chunk[offset++] as number;
      if (this.headerLength < 2) continue;
      const needed = headerBytes(this.header);
      if (needed === undefined) {
        this.handOver(chunk, offset);
        return;
      }
      if (this.headerLength < needed) continue;
      if (!this.startFrame()) {
        this.handOver(chunk, offset);
        return;
      }
      // A data frame's payload follows; a control frame with no payload is already done.
    }
  }

  /**
   * Acts on the complete header in `this.header`: starts a data or control frame, or returns
   * false for a frame ws should see.
   */
  private startFrame(): boolean {
    const header = this.header;
    const fin = (header[0] as number) & 0x80;
    const opcode = (header[0] as number) & 0x0f;
    const length = payloadLength(header);
    if (opcode === Opcode.BINARY || opcode === Opcode.CONTINUATION) {
      if ((opcode === Opcode.BINARY) === this.inMessage) return false;
      if (length === undefined || this.messageBytes + length > this.maxPayload) return false;
      this.messageBytes += length;
      this.inMessage = fin === 0;
      if (!this.inMessage) this.messageBytes = 0;
      this.headerLength = 0;
      this.payloadRemaining = length;
      return true;
    }
    // headerBytes() let only well-formed control frames through.
    this.control = [Buffer.from(header.subarray(0, this.headerLength))];
    this.closing = opcode === Opcode.CLOSE;
    this.headerLength = 0;
    this.payloadRemaining = length as number;
    if (length === 0) this.endControlFrame();
    return true;
  }

  private endControlFrame(): void {
    const frame = Buffer.concat(this.control as Buffer[]);
    this.control = undefined;
    // After a close frame ws owns the connection; whatever follows is its to judge.
    if (this.closing) this.handedOver = true;
    this.toWs(frame);
  }

  /** From the frame whose header is being read on, every byte goes to ws. */
  private handOver(chunk: Buffer, offset: number): void {
    this.handedOver = true;
    this.toWs(Buffer.concat([this.header.subarray(0, this.headerLength), chunk.subarray(offset)]));
    this.headerLength = 0;
  }
}

/**
 * The length of a frame header that starts with `header[0..1]`, or undefined for a frame the
 * reader leaves to ws: RSV bits set, masked (a server must not mask), an opcode other than
 * binary, continuation, close, ping or pong, or a control frame that is fragmented or longer
 * than 125 bytes.
 */
function headerBytes(header: Buffer): number | undefined {
  const first = header[0] as number;
  const second = header[1] as number;
  if ((first & 0x70) !== 0 || (second & 0x80) !== 0) return undefined;
  const opcode = first & 0x0f;
  const length7 = second & 0x7f;
  if (opcode === Opcode.BINARY || opcode === Opcode.CONTINUATION) {
    return length7 === 126 ? 4 : length7 === 127 ? 10 : 2;
  }
  if (opcode === Opcode.CLOSE || opcode === Opcode.PING || opcode === Opcode.PONG) {
    return (first & 0x80) !== 0 && length7 <= MAX_CONTROL_PAYLOAD ? 2 : undefined;
  }
  return undefined;
}

/** The payload length of a complete header, or undefined when it is 2^53 or more. */
function payloadLength(header: Buffer): number | undefined {
  const length7 = (header[1] as number) & 0x7f;
  if (length7 < 126) return length7;
  if (length7 === 126) return header.readUInt16BE(2);
  const high = header.readUInt32BE(2);
  if (high > 0x1fffff) return undefined;
  return high * 0x100000000 + header.readUInt32BE(6);
}
