import { tmpdir } from "node:os";
import {
  IllegalArgumentError,
  IllegalStateError,
  RecordTooLargeError,
  SerializationError,
} from "../errors.js";
import { FreeingBufferRecycler } from "../memory/buffer-recycler.js";
import { DataType } from "../memory/data-type.js";
import { MemorySegment } from "../memory/memory-segment.js";
import { NetworkBuffer } from "../memory/network-buffer.js";
import { copyBytes } from "../memory/shared-memory-copy.js";
import { DataInputDeserializer } from "./data-input-deserializer.js";
import { DeserializationResult } from "./deserialization-result.js";
import {
  checkMaxRecordSize,
  DEFAULT_MAX_RECORD_SIZE,
  MAX_RECORD_SIZE_KEY,
  RECORD_LENGTH_BYTES,
} from "./record-serializer.js";
import { SpillFile } from "./spill-file.js";
import type { TypeSerializer } from "./type-serializer.js";

/** Records longer than this (5 MiB) are spilled to a temp file by default. */
export const DEFAULT_SPILLING_THRESHOLD = 5 * 1024 * 1024;
/** The smallest spilling threshold accepted (100 KiB), as in Flink. */
export const MIN_SPILLING_THRESHOLD = 100 * 1024;

/** Options of a {@link SpillingAdaptiveSpanningRecordDeserializer}. */
export interface SpillingAdaptiveSpanningRecordDeserializerOptions {
  /**
   * Directories for spill files (Flink's `io.tmp.dirs`); one is picked at random per file.
   * Default: `[os.tmpdir()]`.
   */
  tmpDirectories?: readonly string[];
  /**
   * Records with a payload longer than this many bytes are written to a temp file as they arrive
   * instead of being gathered in memory. Default {@link DEFAULT_SPILLING_THRESHOLD} (5 MiB),
   * at least {@link MIN_SPILLING_THRESHOLD} (100 KiB).
   */
  spillingThreshold?: number;
  /**
   * A length prefix above this fails with {@link RecordTooLargeError} before anything is
   * allocated ({@link MAX_RECORD_SIZE_KEY}). Default {@link DEFAULT_MAX_RECORD_SIZE}.
   */
  maxRecordSize?: number;
}

/**
 * A caller-owned slot the deserializer writes each decoded record into, so that the hot path
 * allocates no result object: create one per reader and reuse it. After a call that returns a
 * result with `isFullRecord()`, `value` holds the record; after any other call it is `undefined`.
 */
export interface RecordHolder<T> {
  value: T | undefined;
}

/**
 * Reads one record in place: `input` is positioned on the record's payload and valid only during
 * the call (its bytes may be a network buffer recycled right after). It need not read all of it.
 */
export type RecordViewReader = (input: DataInputDeserializer) => void;

// Parser states (ws Receiver style): what the next input bytes are.
/** The 4 length bytes; the non-spanning fast path starts here when none were gathered yet. */
const READ_LENGTH = 0;
/** The payload of a spanning record, gathered in memory. */
const READ_RECORD = 1;
/** The payload of a spanning record above the spilling threshold, appended to a temp file. */
const SPILL_RECORD = 2;
type ParserState = typeof READ_LENGTH | typeof READ_RECORD | typeof SPILL_RECORD;

const EMPTY = Buffer.alloc(0);
/** Gathering buffers above this are dropped after use, so an idle channel does not pin MiBs. */
const RETAINED_CAPACITY = 64 * 1024;

/**
 * Turns a channel's stream of data buffers back into records (Flink's
 * SpillingAdaptiveSpanningRecordDeserializer), for Flink's record format: an int32
 * big-endian payload length, then the payload, records back to back, any record (its 4 length
 * bytes included) possibly split across any number of buffers.
 *
 * An explicit state machine (`READ_LENGTH` → `READ_RECORD` or `SPILL_RECORD` →
 * `READ_LENGTH`) that consumes whatever input there is and stops when it runs out:
 * - **Fast path**: when no bytes of a record are pending and the whole record lies in the current
 *   buffer, it is decoded straight from the buffer's segment — no copy.
 * - **Spanning records** (the length bytes themselves may be split) are gathered into a growable
 *   buffer that is reused for the next spanning record.
 * - **Large records** (payload above the spilling threshold) are appended to a temp file
 *   `<random>.inputchannel` (a `SpillFile`) as they arrive and read back once complete, so a
 *   channel receiving a huge record holds no more than one network buffer of it in memory
 *   meanwhile. The complete record is read back into one buffer of its size, because
 *   {@link TypeSerializer}s decode from memory.
 *
 * Buffer ownership: `setNextBuffer` takes over one reference of the buffer; the deserializer
 * recycles it as soon as its last byte is consumed (inside the `getNextRecord` call that returns
 * `isBufferConsumed()`), never later, so credit-based flow control is not held up.
 *
 * Errors: a negative length prefix → {@link SerializationError}; one above the maximum record size
 * → {@link RecordTooLargeError}; both name the length and the byte offset in the channel's stream.
 * After such an error the stream is corrupt: call `clear()` (which recycles what is held).
 *
 * Typical loop:
 * ```ts
 * deserializer.setNextBuffer(buffer);
 * for (;;) {
 *   const result = deserializer.getNextRecord(serializer, holder);
 *   if (result.isFullRecord()) emit(holder.value);
 *   if (result.isBufferConsumed()) break;
 * }
 * ```
 */
export class SpillingAdaptiveSpanningRecordDeserializer {
  /** The spilling threshold in bytes. */
  readonly spillingThreshold: number;
  /** The maximum payload length accepted. */
  readonly maxRecordSize: number;
  private readonly tmpDirectories: readonly string[];
  private readonly input = new DataInputDeserializer();

  // The current buffer and its unread window [pos, limit) in its segment's memory.
  private current: NetworkBuffer | undefined;
  private memory: Buffer = EMPTY;
  private pos = 0;
  private limit = 0;
  /** Where the current buffer's readable bytes began in `memory` (for error messages). */
  private bufferStart = 0;
  /** Bytes consumed from this channel's stream since creation or `clear()` (for messages). */
  private streamOffset = 0;

  private state: ParserState = READ_LENGTH;
  private readonly lengthBytes = Buffer.alloc(RECORD_LENGTH_BYTES);
  private lengthFill = 0;
  private recordLength = 0;
  private recordFill = 0;
  /** Gathers spanning records below the spilling threshold. */
  private gather: Buffer = EMPTY;
  private spill: SpillFile | undefined;
  /** Holds the last record of a buffer for `getNextRecordBytes` after the buffer was recycled. */
  private copyOut: Buffer = EMPTY;

  // The record found by the last `nextRecord()`: record bytes [recordStart, recordEnd) of
  // recordMemory, which is the current buffer's memory (fast path), `gather`, or a read-back spill.
  private recordMemory: Buffer = EMPTY;
  private recordStart = 0;
  private recordEnd = 0;
  private recordInBuffer = false;
  /** The object `getNextRecordInto` decodes into, during that call only. */
  private reuse: unknown;

  constructor(options: SpillingAdaptiveSpanningRecordDeserializerOptions = {}) {
    const threshold = options.spillingThreshold ?? DEFAULT_SPILLING_THRESHOLD;
    if (!Number.isInteger(threshold) || threshold < MIN_SPILLING_THRESHOLD) {
      throw new IllegalArgumentError(
        `spilling threshold must be an integer of at least ${MIN_SPILLING_THRESHOLD} bytes, got ${threshold}`,
      );
    }
    const tmpDirectories = options.tmpDirectories ?? [tmpdir()];
    if (tmpDirectories.length === 0) {
      throw new IllegalArgumentError("at least one temp directory is needed for spilling");
    }
    this.spillingThreshold = threshold;
    this.maxRecordSize = checkMaxRecordSize(options.maxRecordSize ?? DEFAULT_MAX_RECORD_SIZE);
    this.tmpDirectories = [...tmpDirectories];
  }

  /**
   * Hands the next buffer of the channel to the deserializer, which takes over one reference of
   * it and recycles it once every byte is consumed. Call only after the previous buffer was
   * consumed (a result with `isBufferConsumed()`); otherwise this throws
   * {@link IllegalStateError} and the buffer stays the caller's.
   */
  setNextBuffer(buffer: NetworkBuffer): void {
    if (this.current !== undefined) {
      if (this.limit > this.pos) {
        throw new IllegalStateError(
          `setNextBuffer called while the previous buffer still has ${this.limit - this.pos} unread bytes`,
        );
      }
      // An empty buffer that was set but never read: nothing to lose.
      this.releaseCurrentBuffer();
    }
    if (buffer.isRecycled()) {
      throw new IllegalStateError(`setNextBuffer got a recycled buffer: ${buffer}`);
    }
    const start = buffer.getMemorySegmentOffset() + buffer.getReaderIndex();
    this.current = buffer;
    this.memory = buffer.getMemorySegment().memory;
    this.bufferStart = start;
    this.pos = start;
    this.limit = start + buffer.readableBytes();
  }

  /**
   * Decodes the next record with `serializer` into `holder.value` if one is complete. Returns
   * {@link DeserializationResult.PARTIAL_RECORD} when the buffer ran out first (then
   * `holder.value` is `undefined` and the next buffer is needed),
   * {@link DeserializationResult.INTERMEDIATE_RECORD_FROM_BUFFER} when a record was decoded and
   * the buffer holds more, {@link DeserializationResult.LAST_RECORD_FROM_BUFFER} when a record was
   * decoded and the buffer is used up. A used-up buffer has been recycled when this returns.
   *
   * The serializer must consume exactly the record's payload; fewer or more bytes raise
   * {@link SerializationError} (a serializer that does not match the writer's).
   */
  getNextRecord<T>(serializer: TypeSerializer<T>, holder: RecordHolder<T>): DeserializationResult {
    if (!this.nextRecord()) {
      holder.value = undefined;
      this.releaseCurrentBuffer();
      return DeserializationResult.PARTIAL_RECORD;
    }
    const consumed = this.pos === this.limit;
    holder.value = undefined;
    try {
      holder.value = this.decode(serializer);
    } finally {
      // The record's bytes may live in the buffer: recycle only after decoding, but always.
      this.input.releaseBuffer();
      if (consumed) this.releaseCurrentBuffer();
    }
    return consumed
      ? DeserializationResult.LAST_RECORD_FROM_BUFFER
      : DeserializationResult.INTERMEDIATE_RECORD_FROM_BUFFER;
  }

  /**
   * Like {@link getNextRecord}, but decodes the record into `reuse` with the serializer's
   * `deserializeInto` (Flink's `deserialize(reuse, source)`), so a reader that keeps one object
   * per channel allocates nothing per record. `holder.value` is what `deserializeInto` returned,
   * normally `reuse` itself. A serializer without `deserializeInto` falls back to `deserialize`.
   */
  getNextRecordInto<T>(
    serializer: TypeSerializer<T>,
    reuse: T,
    holder: RecordHolder<T>,
  ): DeserializationResult {
    if (serializer.deserializeInto === undefined) return this.getNextRecord(serializer, holder);
    this.reuse = reuse;
    try {
      return this.getNextRecord(serializer, holder);
    } finally {
      this.reuse = undefined;
    }
  }

  /**
   * Hands the next complete record to `read` in place, without decoding it into a value: `read`
   * gets a DataInputDeserializer positioned on the payload (no copy, no allocation) that is valid
   * only during the call. Returns as {@link getNextRecord}; `read` is not called for
   * {@link DeserializationResult.PARTIAL_RECORD}. `read` may skip the rest of the payload.
   */
  readNextRecord(read: RecordViewReader): DeserializationResult {
    if (!this.nextRecord()) {
      this.releaseCurrentBuffer();
      return DeserializationResult.PARTIAL_RECORD;
    }
    const consumed = this.pos === this.limit;
    const input = this.input;
    try {
      input.setTrustedBuffer(this.recordMemory, this.recordStart, this.recordEnd);
      read(input);
    } finally {
      input.releaseBuffer();
      if (consumed) this.releaseCurrentBuffer();
    }
    return consumed
      ? DeserializationResult.LAST_RECORD_FROM_BUFFER
      : DeserializationResult.INTERMEDIATE_RECORD_FROM_BUFFER;
  }

  /**
   * Like {@link getNextRecord} but hands out the record's raw payload bytes, for callers that
   * decode themselves. `holder.value` is a view that stays valid until the next call on this
   * deserializer (copy it to keep it). A record still inside the buffer is a view of the segment
   * (no copy); the last record of a buffer is copied to an internal buffer first, because the
   * network buffer is recycled right away.
   */
  getNextRecordBytes(holder: RecordHolder<Uint8Array>): DeserializationResult {
    if (!this.nextRecord()) {
      holder.value = undefined;
      this.releaseCurrentBuffer();
      return DeserializationResult.PARTIAL_RECORD;
    }
    const length = this.recordEnd - this.recordStart;
    if (this.pos !== this.limit) {
      holder.value = this.recordMemory.subarray(this.recordStart, this.recordEnd);
      return DeserializationResult.INTERMEDIATE_RECORD_FROM_BUFFER;
    }
    if (this.recordInBuffer) {
      if (this.copyOut.length < length) this.copyOut = Buffer.allocUnsafe(Math.max(length, 256));
      copyBytes(this.recordMemory, this.copyOut, 0, this.recordStart, this.recordEnd);
      holder.value = this.copyOut.subarray(0, length);
    } else {
      holder.value = this.recordMemory.subarray(this.recordStart, this.recordEnd);
    }
    this.releaseCurrentBuffer();
    return DeserializationResult.LAST_RECORD_FROM_BUFFER;
  }

  /**
   * True while bytes of the channel are held: unread bytes of the current buffer or a partly
   * gathered (or spilled) record.
   */
  hasUnfinishedData(): boolean {
    return this.limit > this.pos || this.state !== READ_LENGTH || this.lengthFill > 0;
  }

  /**
   * A copy of every byte held and not yet turned into a record — the partial record's bytes
   * (length prefix included) followed by the current buffer's unread bytes — in an unpooled
   * buffer, or `undefined` when there are none. Unaligned checkpoints persist this as channel
   * state. Does not change the deserializer's state.
   */
  getUnconsumedBuffer(): NetworkBuffer | undefined {
    if (!this.hasUnfinishedData()) return undefined;
    const remaining = this.limit - this.pos;
    const prefix = this.state === READ_LENGTH ? this.lengthFill : RECORD_LENGTH_BYTES;
    const pending = this.state === READ_LENGTH ? 0 : this.recordFill;
    const size = prefix + pending + remaining;
    const segment = MemorySegment.allocateUnpooled(size);
    const target = segment.memory;
    if (this.state === READ_LENGTH) {
      this.lengthBytes.copy(target, 0, 0, this.lengthFill);
    } else {
      target.writeInt32BE(this.recordLength, 0);
      if (this.state === READ_RECORD) {
        this.gather.copy(target, prefix, 0, pending);
      } else {
        (this.spill as SpillFile).read(target, prefix, pending);
      }
    }
    copyBytes(this.memory, target, prefix + pending, this.pos, this.limit);
    return new NetworkBuffer(segment, FreeingBufferRecycler, DataType.DATA_BUFFER, size);
  }

  /**
   * Drops all state: recycles the current buffer, forgets the partial record and deletes its
   * spill file. The deserializer can then read a new stream. Idempotent.
   */
  clear(): void {
    const spill = this.spill;
    this.spill = undefined;
    this.state = READ_LENGTH;
    this.lengthFill = 0;
    this.recordLength = 0;
    this.recordFill = 0;
    this.gather = EMPTY;
    this.copyOut = EMPTY;
    this.recordMemory = EMPTY;
    this.streamOffset = 0;
    this.input.releaseBuffer();
    try {
      this.releaseCurrentBuffer();
    } finally {
      spill?.delete();
    }
  }

  /** `clear()`, for `using` declarations. */
  [Symbol.dispose](): void {
    this.clear();
  }

  // ------------------------------------------------------------------------------ state machine

  /**
   * Advances the parser over the current buffer until a record is complete (true, the record in
   * recordMemory[recordStart, recordEnd)) or the input runs out (false; every byte consumed).
   */
  private nextRecord(): boolean {
    // Fast path, the case of almost every record: no partial state, and the length prefix and the
    // whole record are in the current buffer. Kept small so the JIT inlines it into the readers;
    // everything else (split prefixes, spanning and spilled records, bad lengths) is `advance`.
    if (this.state === READ_LENGTH && this.lengthFill === 0) {
      const p = this.pos;
      const remaining = this.limit - p;
      if (remaining >= RECORD_LENGTH_BYTES) {
        const memory = this.memory;
        const length = int32At(memory, p);
        if (
          length >= 0 &&
          length <= this.maxRecordSize &&
          remaining - RECORD_LENGTH_BYTES >= length
        ) {
          if (this.gather.length > RETAINED_CAPACITY) this.gather = EMPTY;
          if (this.copyOut.length > RETAINED_CAPACITY) this.copyOut = EMPTY;
          const start = p + RECORD_LENGTH_BYTES;
          this.recordMemory = memory;
          this.recordStart = start;
          this.recordEnd = start + length;
          this.recordInBuffer = true;
          this.pos = start + length;
          this.streamOffset += RECORD_LENGTH_BYTES + length;
          return true;
        }
      }
    }
    return this.advance();
  }

  /** {@link nextRecord} in full: the parser's state machine. */
  private advance(): boolean {
    // The previous record's bytes are no longer promised to anyone.
    this.recordMemory = EMPTY;
    if (this.state === READ_LENGTH && this.gather.length > RETAINED_CAPACITY) this.gather = EMPTY;
    if (this.copyOut.length > RETAINED_CAPACITY) this.copyOut = EMPTY;

    for (;;) {
      const remaining = this.limit - this.pos;
      switch (this.state) {
        case READ_LENGTH: {
          if (this.lengthFill === 0 && remaining >= RECORD_LENGTH_BYTES) {
            // A record that lies whole in this buffer was taken by nextRecord's fast path: this
            // one spans buffers, or its length is invalid (checkLength says how).
            const p = this.pos;
            const length = int32At(this.memory, p);
            this.checkLength(length, this.streamOffset, p - this.bufferStart);
            this.pos = p + RECORD_LENGTH_BYTES;
            this.streamOffset += RECORD_LENGTH_BYTES;
            this.beginRecord(length);
            continue;
          }
          if (remaining === 0) return false;
          // The length prefix itself is split across buffers: gather it byte by byte.
          const count = Math.min(RECORD_LENGTH_BYTES - this.lengthFill, remaining);
          this.memory.copy(this.lengthBytes, this.lengthFill, this.pos, this.pos + count);
          this.pos += count;
          this.lengthFill += count;
          this.streamOffset += count;
          if (this.lengthFill < RECORD_LENGTH_BYTES) return false;
          this.lengthFill = 0;
          const length = this.lengthBytes.readInt32BE(0);
          this.checkLength(length, this.streamOffset - RECORD_LENGTH_BYTES, -1);
          this.beginRecord(length);
          continue;
        }
        case READ_RECORD: {
          const count = Math.min(this.recordLength - this.recordFill, remaining);
          if (count > 0) {
            // Out of shared network memory at its alignment (see shared-memory-copy.ts).
            copyBytes(this.memory, this.gather, this.recordFill, this.pos, this.pos + count);
            this.pos += count;
            this.recordFill += count;
            this.streamOffset += count;
          }
          if (this.recordFill < this.recordLength) return false;
          this.recordMemory = this.gather;
          this.recordStart = 0;
          this.recordEnd = this.recordLength;
          this.recordInBuffer = false;
          this.state = READ_LENGTH;
          return true;
        }
        case SPILL_RECORD: {
          const count = Math.min(this.recordLength - this.recordFill, remaining);
          if (count > 0) {
            (this.spill as SpillFile).write(this.memory, this.pos, count, this.recordFill);
            this.pos += count;
            this.recordFill += count;
            this.streamOffset += count;
          }
          if (this.recordFill < this.recordLength) return false;
          const spill = this.spill as SpillFile;
          const record = Buffer.allocUnsafe(this.recordLength);
          spill.read(record, 0, this.recordLength);
          this.spill = undefined;
          this.state = READ_LENGTH;
          spill.delete();
          this.recordMemory = record;
          this.recordStart = 0;
          this.recordEnd = this.recordLength;
          this.recordInBuffer = false;
          return true;
        }
      }
    }
  }

  /** Runs `serializer` over the record found by `nextRecord()`; it must read all of it. */
  private decode<T>(serializer: TypeSerializer<T>): T {
    const input = this.input;
    input.setTrustedBuffer(this.recordMemory, this.recordStart, this.recordEnd);
    let value: T;
    try {
      const reuse = this.reuse as T | undefined;
      value =
        reuse !== undefined && serializer.deserializeInto !== undefined
          ? serializer.deserializeInto(reuse, input)
          : serializer.deserialize(input);
    } catch (error) {
      throw this.decodeError(error, serializer);
    }
    // The messages are built out of line: this runs once per record and should stay small.
    if (input.available() !== 0) throw this.partlyReadError(serializer);
    return value;
  }

  /** What `serializer` threw on the current record: a SerializationError names the record. */
  private decodeError(error: unknown, serializer: TypeSerializer<unknown>): unknown {
    if (!(error instanceof SerializationError)) return error;
    return new SerializationError(
      `cannot decode the ${this.recordEnd - this.recordStart}-byte record ending at byte ` +
        `${this.streamOffset} of the channel's data with serializer '${serializer.name}': ${error.message}`,
      { cause: error },
    );
  }

  /** The error for a serializer that did not read all of the current record. */
  private partlyReadError(serializer: TypeSerializer<unknown>): SerializationError {
    const length = this.recordEnd - this.recordStart;
    return new SerializationError(
      `serializer '${serializer.name}' read only ${length - this.input.available()} of the ${length} ` +
        `bytes of the record ending at byte ${this.streamOffset} of the channel's data: it does ` +
        "not match the serializer that wrote the record",
    );
  }

  /** Validates a length prefix read at `streamOffset` (`bufferOffset` −1 when it was split). */
  private checkLength(length: number, streamOffset: number, bufferOffset: number): void {
    if (length >= 0 && length <= this.maxRecordSize) return;
    const where =
      `at byte ${streamOffset} of the channel's data` +
      (bufferOffset >= 0
        ? ` (offset ${bufferOffset} of the current buffer)`
        : " (split across buffers)");
    if (length < 0) {
      throw new SerializationError(
        `negative record length ${length} ${where}: the stream is corrupt or out of sync`,
      );
    }
    throw new RecordTooLargeError(
      `record length ${length} ${where} exceeds the maximum record size of ${this.maxRecordSize} ` +
        `bytes; raise '${MAX_RECORD_SIZE_KEY}'`,
    );
  }

  private beginRecord(length: number): void {
    this.recordLength = length;
    this.recordFill = 0;
    if (length > this.spillingThreshold) {
      this.spill = SpillFile.create(this.tmpDirectories, length);
      this.state = SPILL_RECORD;
      return;
    }
    if (this.gather.length < length) {
      // Allocated from the length prefix, but never more than the spilling threshold.
      const grown = Math.max(length, Math.min(this.gather.length * 2, this.spillingThreshold), 256);
      this.gather = Buffer.allocUnsafe(grown);
    }
    this.state = READ_RECORD;
  }

  private releaseCurrentBuffer(): void {
    const buffer = this.current;
    if (buffer === undefined) return;
    this.current = undefined;
    this.memory = EMPTY;
    this.pos = 0;
    this.limit = 0;
    this.bufferStart = 0;
    buffer.recycleBuffer();
  }
}

/**
 * The big-endian int32 at `memory[p]`: a record's length prefix. Byte loads, because
 * Buffer.readInt32BE validates its offset on every call, and this runs once per record.
 */
function int32At(memory: Buffer, p: number): number {
  return (
    ((memory[p] as number) << 24) |
    ((memory[p + 1] as number) << 16) |
    ((memory[p + 2] as number) << 8) |
    (memory[p + 3] as number)
  );
}
