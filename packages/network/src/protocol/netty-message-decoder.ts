import {
  copyBytes,
  DataType,
  ErrorCodes,
  FreeingBufferRecycler,
  IllegalArgumentError,
  IllegalStateError,
  type InputChannelID,
  isBufferType,
  isSluiceError,
  MAX_DATA_TYPE,
  MemorySegment,
  NetworkBuffer,
  ProtocolError,
} from "@sluice/core";
import type { BufferResponseAllocator } from "./buffer-response-allocator.js";
import { isClientBoundId, isServerBoundId, MessageId, messageName } from "./message-id.js";
import {
  BODY_LENGTH,
  BUFFER_RESPONSE,
  BUFFER_RESPONSE_HEADER_LENGTH,
  bufferResponseFrameSize,
  FRAME_HEADER,
  MAGIC_NUMBER,
  MAX_WIRE_FRAME_LENGTH,
  PARTIAL_BUFFER_SIZE_BYTES,
} from "./message-layout.js";
import type { BufferResponse, NettyMessage } from "./netty-message.js";
import { type BodyReader, nonBufferCodecOf } from "./non-buffer-message-codecs.js";
import { ReceiverIdCache } from "./receiver-id-cache.js";
import { hex } from "./wire-format.js";

/** Options of {@link NettyMessageDecoder}. */
export interface NettyMessageDecoderOptions {
  /**
   * `"client"` (consumer side) accepts BufferResponse, ErrorResponse and BacklogAnnouncement
   * (ids 0, 1, 9); `"server"` (producer side) accepts the requests (ids 2–8, 10, 11).
   */
  readonly side: "client" | "server";
  /**
   * The largest frame accepted, header included (the max-frame-size option). Checked against
   * every frame length before anything is allocated for the frame. At least the frame header's
   * size and at most 2^31 − 1.
   */
  readonly maxFrameSize: number;
  /**
   * Destination of data payloads (client side). Without one, data payloads go into exact-size
   * unpooled buffers, like events.
   */
  readonly allocator?: BufferResponseAllocator | undefined;
  /**
   * Receives every decoded message, in stream order, synchronously from `feed`. A BufferResponse's
   * buffer belongs to the callee, which must recycle it. If it throws, the decoder fails and the
   * error propagates out of `feed` unchanged.
   */
  onMessage(msg: NettyMessage): void;
}

// The offsets of the two headers read for every frame, as module constants: on Node 20 reading
// one is cheaper than reading a property of an imported layout object, on the hottest path.
const {
  frameLength: FRAME_LENGTH_AT,
  magic: MAGIC_AT,
  messageId: MESSAGE_ID_AT,
  BYTES: FRAME_HEADER_BYTES,
} = FRAME_HEADER;
const {
  receiverId: RECEIVER_ID_AT,
  subpartitionId: SUBPARTITION_ID_AT,
  numberOfPartialBuffers: PARTIAL_BUFFERS_AT,
  sequenceNumber: SEQUENCE_NUMBER_AT,
  backlog: BACKLOG_AT,
  dataType: DATA_TYPE_AT,
  isCompressed: IS_COMPRESSED_AT,
  bufferSize: BUFFER_SIZE_AT,
  BYTES: BUFFER_HEADER_BYTES,
} = BUFFER_RESPONSE;

// Decoder states. Plain numbers (no const enum) so the switch stays a cheap jump table.
const ST_FRAME_HEADER = 0;
const ST_BUFFER_HEADER = 1;
const ST_PARTIAL_SIZES = 2;
const ST_PAYLOAD = 3;
const ST_SKIP = 4;
const ST_BODY = 5;
const ST_FAILED = 6;
const ST_DESTROYED = 7;

const INITIAL_BODY_CAPACITY = 128;
/** A body buffer grown past this is dropped after use instead of being kept for the next frame. */
const RETAINED_BODY_CAPACITY = 64 * 1024;

const EMPTY_SIZES: readonly number[] = Object.freeze([]);
const EMPTY_BUFFER = Buffer.alloc(0);

/**
 * Decodes the Netty-style frame stream of docs/protocol.md (explicit state machine, as ws'
 * `Receiver`). `feed` accepts chunks split at any byte and several frames per chunk; every
 * complete message goes to `onMessage` synchronously.
 *
 * - The frame header (and the fixed part of a BufferResponse header) is read straight from the
 *   chunk when it is whole there, else accumulated in a small fixed buffer.
 * - The frame length is checked (not below the frame header, ≤ `maxFrameSize`, consistent with
 *   the message id) before anything is allocated for the frame.
 * - A BufferResponse payload is copied exactly once, from the chunks into its destination: a
 *   credited buffer from the allocator (data), or an exact-size unpooled buffer (events). A
 *   zero-size data buffer is emitted with `buffer: undefined`.
 * - Other messages accumulate in a growable buffer (only as bytes arrive) and are parsed whole.
 *
 * Any violation throws a {@link ProtocolError} naming what was read, the stream offset of the
 * frame and the receiver when known; from then on `feed` throws again (the transport closes the
 * connection). `destroy()` recycles a partially filled buffer.
 */
export class NettyMessageDecoder {
  private readonly isClient: boolean;
  private readonly maxFrameSize: number;
  private readonly allocator: BufferResponseAllocator | undefined;
  private readonly sink: NettyMessageDecoderOptions;
  private readonly receiverIds = new ReceiverIdCache();
  /** What the message codecs read a body through: the shared receiver ids and this frame's errors. */
  private readonly bodyReader: BodyReader = {
    receiverId: (src, at) => this.receiverIds.read(src, at),
    violation: (what, receiverId, cause) => this.violation(what, receiverId, cause),
  };

  private state = ST_FRAME_HEADER;
  /** Stream offset of the first byte of the chunk being decoded. */
  private chunkOffset = 0;
  /** The error that failed the decoder. */
  private failure: unknown;

  /** Accumulates a split frame header or fixed BufferResponse header (the longer of the two). */
  private readonly scratch = Buffer.alloc(Math.max(FRAME_HEADER_BYTES, BUFFER_HEADER_BYTES));
  private scratchFill = 0;
  /** Accumulates a split message body or partial-size list; grows as bytes arrive. */
  private body: Buffer = Buffer.allocUnsafe(INITIAL_BODY_CAPACITY);
  private bodyFill = 0;
  private bodyLength = 0;

  // The current frame.
  private frameStart = 0;
  private frameLength = 0;
  private messageId = 0;

  // The current BufferResponse.
  private receiverId: InputChannelID | undefined = undefined;
  private subpartitionId = 0;
  private numberOfPartialBuffers = 0;
  private partialBufferSizes: readonly number[] = EMPTY_SIZES;
  private sequenceNumber = 0;
  private backlog = 0;
  private dataType: DataType = DataType.NONE;
  private isCompressed = false;
  private bufferSize = 0;
  /** The buffer being filled; owned by the decoder until emitted. */
  private target: NetworkBuffer | undefined = undefined;
  private targetMemory: Buffer = EMPTY_BUFFER;
  private targetPosition = 0;
  /** Payload bytes still to copy or to skip. */
  private remaining = 0;

  constructor(options: NettyMessageDecoderOptions) {
    if (options.side !== "client" && options.side !== "server") {
      throw new IllegalArgumentError(
        `side must be "client" or "server", got ${JSON.stringify(options.side)}`,
      );
    }
    const max = options.maxFrameSize;
    if (!Number.isInteger(max) || max < FRAME_HEADER_BYTES || max > MAX_WIRE_FRAME_LENGTH) {
      throw new IllegalArgumentError(
        `maxFrameSize must be an integer in [${FRAME_HEADER_BYTES}, ${MAX_WIRE_FRAME_LENGTH}], got ${max}`,
      );
    }
    if (typeof options.onMessage !== "function") {
      throw new IllegalArgumentError("onMessage must be a function");
    }
    this.isClient = options.side === "client";
    this.maxFrameSize = max;
    this.allocator = options.allocator;
    this.sink = options;
  }

  /** Bytes consumed by completed `feed` calls (the stream offset of the next chunk). */
  get streamOffset(): number {
    return this.chunkOffset;
  }

  /** True after a protocol violation or a throwing callback; `feed` then throws. */
  isFailed(): boolean {
    return this.state === ST_FAILED;
  }

  /** True after `destroy()`. */
  isDestroyed(): boolean {
    return this.state === ST_DESTROYED;
  }

  /** True when no frame is partially decoded (the stream is at a frame boundary). */
  isAtFrameBoundary(): boolean {
    return this.state === ST_FRAME_HEADER && this.scratchFill === 0;
  }

  /**
   * Decodes `chunk` (any split of the stream). Messages completed by it are passed to
   * `onMessage` before this returns. The chunk is not retained: a partial frame's bytes are
   * copied out (headers and small bodies) or straight into the destination buffer (payloads).
   * Throws {@link ProtocolError} on a violation, and again on every later call. Must not be
   * called from `onMessage` (call `destroy()` there to stop decoding the rest of the chunk).
   */
  feed(chunk: Uint8Array): void {
    if (this.state >= ST_FAILED) this.refuse();
    const buf = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const end = buf.length;
    let pos = 0;
    try {
      while (pos < end) {
        switch (this.state) {
          case ST_FRAME_HEADER:
          case ST_BUFFER_HEADER:
            pos = this.readHeader(buf, pos, end);
            break;
          case ST_PARTIAL_SIZES:
            pos = this.readPartialSizes(buf, pos, end);
            break;
          case ST_PAYLOAD:
            pos = this.readPayload(buf, pos, end);
            break;
          case ST_SKIP:
            pos = this.skipPayload(buf, pos, end);
            break;
          case ST_BODY:
            pos = this.readBody(buf, pos, end);
            break;
          default:
            // destroy() was called from a callback: drop the rest.
            return;
        }
      }
    } catch (err) {
      this.fail(err);
      throw err;
    }
    this.chunkOffset += end;
  }

  /**
   * Releases what the decoder holds: a partially filled payload buffer is recycled (it goes back
   * to its channel / pool). Later `feed` calls throw. Idempotent.
   */
  destroy(): void {
    if (this.state === ST_DESTROYED) return;
    this.state = ST_DESTROYED;
    this.releaseTarget();
    this.body = EMPTY_BUFFER;
  }

  // ----------------------------------------------------------------------------- headers

  /**
   * Reads the header the state expects: the frame header, or the fixed part of a BufferResponse.
   * When it is whole in the chunk it is parsed in place; otherwise its bytes are accumulated in
   * `scratch` across chunks and it is parsed from there once complete.
   */
  private readHeader(buf: Buffer, pos: number, end: number): number {
    const isFrameHeader = this.state === ST_FRAME_HEADER;
    const length = isFrameHeader ? FRAME_HEADER_BYTES : BUFFER_HEADER_BYTES;
    let src = buf;
    let at = pos;
    const fill = this.scratchFill;
    if (fill === 0 && end - pos >= length) {
      pos += length;
    } else {
      const n = Math.min(length - fill, end - pos);
      buf.copy(this.scratch, fill, pos, pos + n);
      pos += n;
      if (fill + n < length) {
        this.scratchFill = fill + n;
        return pos;
      }
      this.scratchFill = 0;
      src = this.scratch;
      at = 0;
    }
    if (isFrameHeader) this.parseFrameHeader(src, at, pos);
    else this.parseBufferHeader(src, at);
    return pos;
  }

  /** Parses a frame header at `at` of `src`; `pos` is the chunk position right after it. */
  private parseFrameHeader(src: Buffer, at: number, pos: number): void {
    this.frameStart = this.chunkOffset + pos - FRAME_HEADER_BYTES;
    const frameLength = src.readInt32BE(at + FRAME_LENGTH_AT);
    const magic = src.readUInt32BE(at + MAGIC_AT);
    const id = src[at + MESSAGE_ID_AT] as number;
    this.frameLength = frameLength;
    this.messageId = id;

    if (magic !== MAGIC_NUMBER) {
      throw this.violation(
        `bad magic number ${hex(magic, 8)} (expected ${hex(MAGIC_NUMBER, 8)}): the stream is corrupted or not a Sluice data connection`,
      );
    }
    if (frameLength < FRAME_HEADER_BYTES) {
      throw this.violation(
        `frame length ${frameLength} is below the ${FRAME_HEADER_BYTES}-byte header`,
      );
    }
    if (frameLength > this.maxFrameSize) {
      throw this.violation(
        `frame length ${frameLength} exceeds the max frame size ${this.maxFrameSize}`,
      );
    }
    if (!(this.isClient ? isClientBoundId(id) : isServerBoundId(id))) {
      throw this.violation(
        `message id ${hex(id, 2)} (${messageName(id)}) is not valid for the ${this.isClient ? "client" : "server"} side`,
      );
    }
    if (id === MessageId.BUFFER_RESPONSE) {
      if (frameLength < BUFFER_RESPONSE_HEADER_LENGTH) {
        throw this.violation(
          `frame length ${frameLength} is below the ${BUFFER_RESPONSE_HEADER_LENGTH}-byte BufferResponse header`,
        );
      }
      this.state = ST_BUFFER_HEADER;
      return;
    }
    const bodyLength = frameLength - FRAME_HEADER_BYTES;
    const expected = BODY_LENGTH[id] as { readonly exact: boolean; readonly bytes: number };
    if (expected.exact ? bodyLength !== expected.bytes : bodyLength < expected.bytes) {
      throw this.violation(
        `body of ${bodyLength} bytes, but a ${messageName(id)} body has ${expected.exact ? "exactly" : "at least"} ${expected.bytes} bytes`,
      );
    }
    this.bodyLength = bodyLength;
    this.bodyFill = 0;
    if (bodyLength === 0) {
      // CloseRequest: complete without waiting for another byte.
      this.state = ST_FRAME_HEADER;
      this.emit(this.parseBody(EMPTY_BUFFER, 0));
    } else {
      this.state = ST_BODY;
    }
  }

  // ---------------------------------------------------------------- BufferResponse (client)

  /** Parses the fixed BufferResponse header at `at` of `src` and moves to what follows it. */
  private parseBufferHeader(src: Buffer, at: number): void {
    const receiverId = this.receiverIds.read(src, at + RECEIVER_ID_AT);
    this.receiverId = receiverId;
    const subpartitionId = src.readInt32BE(at + SUBPARTITION_ID_AT);
    const n = src.readInt32BE(at + PARTIAL_BUFFERS_AT);
    this.sequenceNumber = src.readInt32BE(at + SEQUENCE_NUMBER_AT);
    const backlog = src.readInt32BE(at + BACKLOG_AT);
    const dataType = src[at + DATA_TYPE_AT] as number;
    const compressed = src[at + IS_COMPRESSED_AT] as number;
    const size = src.readInt32BE(at + BUFFER_SIZE_AT);

    if (subpartitionId < 0) throw this.violation(`negative subpartitionId ${subpartitionId}`);
    if (backlog < 0) throw this.violation(`negative backlog ${backlog}`);
    if (dataType === DataType.NONE || dataType > MAX_DATA_TYPE) {
      throw this.violation(`dataType ${hex(dataType, 2)} is not in [1, ${MAX_DATA_TYPE}]`);
    }
    if (compressed > 1) {
      throw this.violation(`isCompressed byte ${hex(compressed, 2)} is neither 0 nor 1`);
    }
    const isData = isBufferType(dataType);
    if (compressed === 1 && !isData) {
      throw this.violation(`a ${DataType[dataType]} cannot be compressed`);
    }
    if (size < 0) throw this.violation(`negative bufferSize ${size} (${hex(size, 8)})`);
    const maxPartial = Math.floor(
      (this.frameLength - BUFFER_RESPONSE_HEADER_LENGTH) / PARTIAL_BUFFER_SIZE_BYTES,
    );
    if (n < 0 || n > maxPartial) {
      throw this.violation(
        `numberOfPartialBuffers ${n} (${hex(n, 8)}) out of range [0, ${maxPartial}] for the frame length`,
      );
    }
    const total = bufferResponseFrameSize(n, size);
    if (total !== this.frameLength) {
      throw this.violation(
        `header fields do not add up to the frame length: ${BUFFER_RESPONSE_HEADER_LENGTH} + ${PARTIAL_BUFFER_SIZE_BYTES} × ${n} partial sizes + bufferSize ${size} = ${total}`,
      );
    }
    if (size === 0 && !isData) throw this.violation(`a ${DataType[dataType]} of 0 bytes`);
    this.subpartitionId = subpartitionId;
    this.numberOfPartialBuffers = n;
    this.backlog = backlog;
    this.dataType = dataType;
    this.isCompressed = compressed === 1;
    this.bufferSize = size;
    if (n > 0) {
      this.bodyLength = PARTIAL_BUFFER_SIZE_BYTES * n;
      this.bodyFill = 0;
      this.state = ST_PARTIAL_SIZES;
    } else {
      this.partialBufferSizes = EMPTY_SIZES;
      this.startPayload();
    }
  }

  private readPartialSizes(buf: Buffer, pos: number, end: number): number {
    const length = this.bodyLength;
    if (this.bodyFill === 0 && end - pos >= length) {
      this.parsePartialSizes(buf, pos);
      return pos + length;
    }
    const next = this.accumulate(buf, pos, end);
    if (this.bodyFill === length) this.parsePartialSizes(this.body, 0);
    return next;
  }

  private parsePartialSizes(src: Buffer, at: number): void {
    const n = this.numberOfPartialBuffers;
    const sizes = new Array<number>(n);
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const partial = src.readInt32BE(at + PARTIAL_BUFFER_SIZE_BYTES * i);
      if (partial < 1) {
        throw this.violation(`partial buffer size #${i} is ${partial}; each must be >= 1`);
      }
      sizes[i] = partial;
      sum += partial;
    }
    if (sum !== this.bufferSize) {
      throw this.violation(
        `the ${n} partial buffer sizes add up to ${sum}, not to bufferSize ${this.bufferSize}`,
      );
    }
    this.releaseBody();
    this.partialBufferSizes = sizes;
    this.startPayload();
  }

  /** Picks the payload's destination once the whole BufferResponse header is valid. */
  private startPayload(): void {
    const size = this.bufferSize;
    if (size === 0) {
      // Zero-size data buffer: returns the credit, carries the backlog; nothing to allocate.
      this.emitBufferResponse(undefined);
      return;
    }
    let buffer: NetworkBuffer | undefined;
    const allocator = this.allocator;
    if (allocator !== undefined && isBufferType(this.dataType)) {
      buffer = allocator.allocateDataBuffer(this.receiverId as InputChannelID, size);
      if (buffer === undefined) {
        this.remaining = size;
        this.state = ST_SKIP;
        return;
      }
      if (buffer.isReadOnly() || buffer.getSize() !== 0) {
        const kind = buffer.isReadOnly() ? "read-only" : "non-empty";
        buffer.recycleBuffer();
        throw new IllegalStateError(
          `allocateDataBuffer returned a ${kind} buffer for receiver ${this.receiverId}`,
        );
      }
      const capacity = buffer.getMaxCapacity();
      if (capacity < size) {
        buffer.recycleBuffer();
        throw this.violation(
          `payload of ${size} bytes does not fit the channel's buffer of ${capacity} bytes`,
        );
      }
    } else {
      // Events (and data without an allocator): exact-size, outside any pool, no credit.
      buffer = new NetworkBuffer(
        MemorySegment.allocateUnpooled(size),
        FreeingBufferRecycler,
        this.dataType,
        0,
        false,
      );
    }
    this.target = buffer;
    this.targetMemory = buffer.getMemorySegment().memory;
    this.targetPosition = buffer.getMemorySegmentOffset();
    this.remaining = size;
    this.state = ST_PAYLOAD;
  }

  private readPayload(buf: Buffer, pos: number, end: number): number {
    const available = end - pos;
    const n = Math.min(this.remaining, available);
    // The one copy: socket chunk → destination segment (at the segment's alignment when it is
    // shared network memory, see copyBytes).
    copyBytes(buf, this.targetMemory, this.targetPosition, pos, pos + n);
    this.targetPosition += n;
    this.remaining -= n;
    if (this.remaining === 0) {
      const buffer = this.target as NetworkBuffer;
      this.target = undefined;
      this.targetMemory = EMPTY_BUFFER;
      buffer.setSize(this.bufferSize);
      buffer.setDataType(this.dataType);
      buffer.setCompressed(this.isCompressed);
      this.emitBufferResponse(buffer);
    }
    return pos + n;
  }

  private skipPayload(_buf: Buffer, pos: number, end: number): number {
    const available = end - pos;
    const n = Math.min(this.remaining, available);
    this.remaining -= n;
    if (this.remaining === 0) {
      const receiverId = this.receiverId as InputChannelID;
      this.resetFrame();
      this.allocator?.onSkipped?.(receiverId, this.bufferSize);
    }
    return pos + n;
  }

  private emitBufferResponse(buffer: NetworkBuffer | undefined): void {
    const msg: BufferResponse = {
      id: MessageId.BUFFER_RESPONSE,
      receiverId: this.receiverId as InputChannelID,
      subpartitionId: this.subpartitionId,
      partialBufferSizes: this.partialBufferSizes,
      sequenceNumber: this.sequenceNumber,
      backlog: this.backlog,
      dataType: this.dataType,
      isCompressed: this.isCompressed,
      bufferSize: this.bufferSize,
      buffer,
    };
    this.resetFrame();
    this.emit(msg);
  }

  // ---------------------------------------------------------------------- other messages

  private readBody(buf: Buffer, pos: number, end: number): number {
    const length = this.bodyLength;
    if (this.bodyFill === 0 && end - pos >= length) {
      // Whole body in this chunk: parse in place, no copy.
      this.state = ST_FRAME_HEADER;
      this.emit(this.parseBody(buf, pos));
      return pos + length;
    }
    const next = this.accumulate(buf, pos, end);
    if (this.bodyFill === length) {
      this.state = ST_FRAME_HEADER;
      const msg = this.parseBody(this.body, 0);
      this.releaseBody();
      this.emit(msg);
    }
    return next;
  }

  /** Copies up to the missing body bytes into `body`, growing it only as bytes arrive. */
  private accumulate(buf: Buffer, pos: number, end: number): number {
    const fill = this.bodyFill;
    const n = Math.min(this.bodyLength - fill, end - pos);
    const needed = fill + n;
    if (needed > this.body.length) {
      const grown = Buffer.allocUnsafe(
        Math.min(this.bodyLength, Math.max(needed, this.body.length * 2)),
      );
      this.body.copy(grown, 0, 0, fill);
      this.body = grown;
    }
    buf.copy(this.body, fill, pos, pos + n);
    this.bodyFill = needed;
    return pos + n;
  }

  private releaseBody(): void {
    this.bodyFill = 0;
    if (this.body.length > RETAINED_BODY_CAPACITY) {
      this.body = Buffer.allocUnsafe(INITIAL_BODY_CAPACITY);
    }
  }

  /** Parses a complete non-buffer body of `bodyLength` bytes at `at` of `src`. */
  private parseBody(src: Buffer, at: number): NettyMessage {
    try {
      return this.parseBodyUnchecked(src, at);
    } catch (err) {
      if (isSluiceError(err, ErrorCodes.PROTOCOL)) throw err;
      // A value a core constructor rejects (e.g. an id field out of range) is a protocol error.
      throw this.violation(err instanceof Error ? err.message : String(err), undefined, err);
    }
  }

  private parseBodyUnchecked(src: Buffer, at: number): NettyMessage {
    const codec = nonBufferCodecOf(this.messageId);
    // Unreachable: ids were checked against the side in the frame header.
    if (codec === undefined)
      throw this.violation(`unexpected message id ${hex(this.messageId, 2)}`);
    return codec.decode(src, at, this.bodyLength, this.bodyReader);
  }

  // ------------------------------------------------------------------------------ helpers

  private emit(msg: NettyMessage): void {
    this.sink.onMessage(msg);
  }

  private resetFrame(): void {
    this.state = ST_FRAME_HEADER;
    this.receiverId = undefined;
    this.partialBufferSizes = EMPTY_SIZES;
  }

  private releaseTarget(): void {
    const target = this.target;
    if (target === undefined) return;
    this.target = undefined;
    this.targetMemory = EMPTY_BUFFER;
    if (!target.isRecycled()) target.recycleBuffer();
  }

  private fail(err: unknown): void {
    if (this.state === ST_FAILED || this.state === ST_DESTROYED) return;
    this.state = ST_FAILED;
    this.failure = err;
    this.releaseTarget();
  }

  private refuse(): never {
    if (this.state === ST_DESTROYED) {
      throw new IllegalStateError("NettyMessageDecoder was destroyed; no more input is accepted");
    }
    const failure = this.failure;
    const reason = failure instanceof Error ? failure.message : String(failure);
    if (isSluiceError(failure, ErrorCodes.PROTOCOL)) {
      throw new ProtocolError(`decoder already failed: ${reason}`, { cause: failure });
    }
    throw new IllegalStateError(`decoder already failed: ${reason}`, { cause: failure });
  }

  /** A ProtocolError naming the frame (stream offset, length, id) and the receiver when known. */
  private violation(what: string, receiverId = this.receiverId, cause?: unknown): ProtocolError {
    const id = this.messageId;
    const length = this.frameLength;
    let text =
      `${this.isClient ? "client" : "server"} decoder: ${what} ` +
      `[frame at stream offset ${this.frameStart}, length ${length} (${hex(length, 8)}), ` +
      `id ${hex(id, 2)} (${messageName(id)})`;
    if (receiverId !== undefined) text += `, receiver ${receiverId.toString()}`;
    text += "]";
    return new ProtocolError(text, cause === undefined ? undefined : { cause });
  }
}
