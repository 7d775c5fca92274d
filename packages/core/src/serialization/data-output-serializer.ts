import { IllegalArgumentError, RecordTooLargeError } from "../errors.js";
import { isByteRangeWithin } from "./byte-range.js";

/** Options of a {@link DataOutputSerializer}. */
export interface DataOutputSerializerOptions {
  /** Bytes allocated up front (default 64). The buffer doubles whenever a write does not fit. */
  initialCapacity?: number;
  /**
   * The most bytes this output may ever hold (default 2³¹ − 1, the largest length the int32
   * record framing can express). A write that would go beyond it throws
   * {@link RecordTooLargeError} instead of growing, so one oversized value cannot take all memory.
   */
  maxSize?: number;
  /**
   * The address of the buffer's first byte modulo 8 (0 to 7, default 0), kept when the buffer
   * grows. A writer that copies what it serialized into shared memory at a known alignment
   * serializes into an output of the same alignment: V8 copies between ordinary and shared memory
   * a word at a time only when the two addresses agree modulo 8.
   */
  alignment?: number;
}

/** The largest length an int32 length prefix can carry; also Java's array limit. */
const MAX_INT32 = 0x7fff_ffff;
const DEFAULT_INITIAL_CAPACITY = 64;
const EMPTY_VIEW = Buffer.alloc(0);
/**
 * Below this many UTF-16 units `writeString` reserves the worst case (3 bytes per unit) and
 * encodes in one pass; above it, it measures first so that a large string does not reserve
 * three times its size.
 */
const SINGLE_PASS_STRING_UNITS = 1024;

/**
 * A growable big-endian output (Flink's DataOutputSerializer): the scratch buffer a record or an
 * event is serialized into before it is copied into network buffers.
 *
 * The primitive writers follow `java.io.DataOutput`: `writeByte`/`writeShort`/`writeInt` write
 * the low 8/16/32 bits of their argument and `writeLong` the low 64 bits, without range checks —
 * range checks belong to the {@link TypeSerializer}s, which know the value's type. The buffer is a
 * Node `Buffer`, so `getSharedBuffer()` can be handed to a socket or a BufferBuilder without a copy.
 *
 * Not thread-safe in the Java sense and not reentrant: one record at a time.
 */
export class DataOutputSerializer {
  /** The most bytes this output may hold; see {@link DataOutputSerializerOptions.maxSize}. */
  readonly maxSize: number;
  /** The address of `buffer`'s first byte modulo 8; see {@link DataOutputSerializerOptions.alignment}. */
  readonly alignment: number;
  private buffer: Buffer;
  /** `buffer` as a DataView: its bigint accessors are several times faster than Buffer's. */
  private view: DataView;
  private position = 0;
  /**
   * The last view `getSharedBuffer()` returned. Records of one type often have one size, so the
   * same view serves the next record too: no view object per record on the write path.
   */
  private sharedView: Buffer = EMPTY_VIEW;
  /** The buffer `sharedView` is a view of. */
  private sharedViewOf: Buffer = EMPTY_VIEW;

  constructor(options: DataOutputSerializerOptions = {}) {
    const maxSize = options.maxSize ?? MAX_INT32;
    if (!Number.isInteger(maxSize) || maxSize < 0 || maxSize > MAX_INT32) {
      throw new IllegalArgumentError(
        `maxSize must be an integer in [0, ${MAX_INT32}], got ${maxSize}`,
      );
    }
    const initialCapacity = options.initialCapacity ?? Math.min(DEFAULT_INITIAL_CAPACITY, maxSize);
    if (!Number.isInteger(initialCapacity) || initialCapacity < 0 || initialCapacity > maxSize) {
      throw new IllegalArgumentError(
        `initialCapacity must be an integer in [0, maxSize ${maxSize}], got ${initialCapacity}`,
      );
    }
    const alignment = options.alignment ?? 0;
    if (!Number.isInteger(alignment) || alignment < 0 || alignment > 7) {
      throw new IllegalArgumentError(`alignment must be an integer in [0, 7], got ${alignment}`);
    }
    this.maxSize = maxSize;
    this.alignment = alignment;
    this.buffer = allocateAt(initialCapacity, alignment);
    this.view = viewOf(this.buffer);
  }

  /** Bytes written so far (the write position). */
  get length(): number {
    return this.position;
  }

  /** Bytes the current buffer holds before it has to grow. */
  get capacity(): number {
    return this.buffer.length;
  }

  /** Resets the write position to 0; keeps the allocated buffer for the next record. */
  clear(): void {
    this.position = 0;
  }

  /**
   * A view (no copy) of the bytes written, `[0, length)`. Valid until the next write that grows
   * the buffer, or the next `clear()` and write: copy it if it must outlive the next record.
   */
  getSharedBuffer(): Buffer {
    const view = this.sharedView;
    // Same backing buffer (it was not grown) and same length: the view is identical.
    if (view.length === this.position && this.sharedViewOf === this.buffer) return view;
    this.sharedViewOf = this.buffer;
    this.sharedView = this.buffer.subarray(0, this.position);
    return this.sharedView;
  }

  /** A copy of the bytes written, `[0, length)`, that the caller owns. */
  copyOfBuffer(): Uint8Array {
    return new Uint8Array(this.buffer.subarray(0, this.position));
  }

  /**
   * Moves the write position to `position` (at most `maxSize`), growing the buffer when needed.
   * Bytes between the old and new position keep whatever they held.
   */
  setPosition(position: number): void {
    if (!Number.isInteger(position) || position < 0) {
      throw new IllegalArgumentError(`position must be a non-negative integer, got ${position}`);
    }
    if (position > this.buffer.length) this.grow(position);
    this.position = position;
  }

  /** Reserves `count` bytes (for a length to patch later with `writeIntAt`) and skips them. */
  skipBytesToWrite(count: number): void {
    if (!Number.isInteger(count) || count < 0) {
      throw new IllegalArgumentError(`bytes to skip must be a non-negative integer, got ${count}`);
    }
    this.ensure(count);
    this.position += count;
  }

  /** Writes the low 8 bits of `value`. */
  writeByte(value: number): void {
    this.ensure(1);
    this.buffer[this.position++] = value;
  }

  /** Writes 1 for true, 0 for false. */
  writeBoolean(value: boolean): void {
    this.ensure(1);
    this.buffer[this.position++] = value ? 1 : 0;
  }

  /** Writes the low 16 bits of `value`, big-endian. */
  writeShort(value: number): void {
    this.ensure(2);
    const buffer = this.buffer;
    const p = this.position;
    buffer[p] = value >>> 8;
    buffer[p + 1] = value;
    this.position = p + 2;
  }

  /** Writes one UTF-16 code unit (the low 16 bits of `charCode`), big-endian, like Java's char. */
  writeChar(charCode: number): void {
    this.writeShort(charCode);
  }

  /** Writes the low 32 bits of `value`, big-endian. */
  writeInt(value: number): void {
    this.ensure(4);
    this.putInt(this.position, value);
    this.position += 4;
  }

  /** Writes the low 64 bits of `value` (two's complement), big-endian. */
  writeLong(value: bigint): void {
    this.ensure(8);
    // setBigInt64 stores the value modulo 2^64, as Java's (long) cast.
    this.view.setBigInt64(this.position, value);
    this.position += 8;
  }

  /** Writes an IEEE 754 single, big-endian (the value is rounded to float precision). */
  writeFloat(value: number): void {
    this.ensure(4);
    this.buffer.writeFloatBE(value, this.position);
    this.position += 4;
  }

  /** Writes an IEEE 754 double, big-endian. NaN payloads and −0 are kept. */
  writeDouble(value: number): void {
    this.ensure(8);
    this.buffer.writeDoubleBE(value, this.position);
    this.position += 8;
  }

  /** Copies `source[offset, offset + length)`. */
  writeBytes(source: Uint8Array, offset = 0, length = source.length - offset): void {
    // A whole source (what serializers pass) needs no range check; the check and its message are
    // out of line, which keeps this per-record method small enough to inline.
    if (offset !== 0 || length !== source.length) checkByteRange(source, offset, length);
    this.ensure(length);
    this.buffer.set(
      offset === 0 && length === source.length ? source : source.subarray(offset, offset + length),
      this.position,
    );
    this.position += length;
  }

  /** Writes `value` at `position` inside the written bytes: patches a length reserved earlier. */
  writeIntAt(position: number, value: number): void {
    if (!Number.isInteger(position) || position < 0 || position + 4 > this.position) {
      throw new IllegalArgumentError(
        `cannot patch an int at ${position}: outside the ${this.position} bytes written`,
      );
    }
    this.putInt(position, value);
  }

  /**
   * Writes `value` in Java's modified UTF-8 (`DataOutput.writeUTF`): an unsigned 16-bit byte
   * count, then each UTF-16 unit as 1 byte (U+0001..U+007F), 2 bytes (U+0000, U+0080..U+07FF) or
   * 3 bytes (the rest, each surrogate on its own). Flink uses it for event class names; unlike
   * UTF-8 it round-trips any JS string, lone surrogates included. Throws
   * {@link IllegalArgumentError} when the encoding exceeds 65 535 bytes.
   */
  writeUTF(value: string): void {
    const units = value.length;
    let encodedLength = 0;
    for (let i = 0; i < units; i++) {
      const c = value.charCodeAt(i);
      encodedLength += c >= 0x0001 && c <= 0x007f ? 1 : c <= 0x07ff ? 2 : 3;
    }
    if (encodedLength > 0xffff) {
      throw new IllegalArgumentError(
        `string of ${units} UTF-16 units encodes to ${encodedLength} bytes of modified UTF-8, ` +
          "more than the 65535 a 2-byte length can carry",
      );
    }
    this.ensure(2 + encodedLength);
    const buffer = this.buffer;
    let p = this.position;
    buffer[p++] = encodedLength >>> 8;
    buffer[p++] = encodedLength;
    for (let i = 0; i < units; i++) {
      const c = value.charCodeAt(i);
      if (c >= 0x0001 && c <= 0x007f) {
        buffer[p++] = c;
      } else if (c <= 0x07ff) {
        buffer[p++] = 0xc0 | (c >>> 6);
        buffer[p++] = 0x80 | (c & 0x3f);
      } else {
        buffer[p++] = 0xe0 | (c >>> 12);
        buffer[p++] = 0x80 | ((c >>> 6) & 0x3f);
        buffer[p++] = 0x80 | (c & 0x3f);
      }
    }
    this.position = p;
  }

  /**
   * Writes `value` as an int32 byte count followed by its standard UTF-8 bytes. Lone surrogates
   * cannot be expressed in UTF-8 and are written as U+FFFD (callers that must not lose data, such
   * as {@link StringSerializer}, reject such strings first).
   */
  writeString(value: string): void {
    const units = value.length;
    const start = this.position;
    // UTF-8 needs at most 3 bytes per UTF-16 unit (a surrogate pair: 4 bytes for 2 units).
    if (units <= SINGLE_PASS_STRING_UNITS && start + 4 + 3 * units <= this.buffer.length) {
      const written = this.buffer.write(value, start + 4, "utf8");
      this.putInt(start, written);
      this.position = start + 4 + written;
      return;
    }
    const byteLength = Buffer.byteLength(value, "utf8");
    this.ensure(4 + byteLength);
    this.writeInt(byteLength);
    this.buffer.write(value, this.position, byteLength, "utf8");
    this.position += byteLength;
  }

  /** Byte-wise store: faster than writeInt32BE for the hot path and wraps like Java's int. */
  private putInt(position: number, value: number): void {
    const buffer = this.buffer;
    buffer[position] = value >>> 24;
    buffer[position + 1] = value >>> 16;
    buffer[position + 2] = value >>> 8;
    buffer[position + 3] = value;
  }

  private ensure(count: number): void {
    const required = this.position + count;
    if (required > this.buffer.length) this.grow(required);
  }

  private grow(required: number): void {
    if (required > this.maxSize) {
      throw new RecordTooLargeError(
        `serialized data needs ${required} bytes, more than the maximum of ${this.maxSize} bytes ` +
          `of this output (${this.position} bytes written so far)`,
      );
    }
    const capacity = Math.min(Math.max(this.buffer.length * 2, required), this.maxSize);
    const grown = allocateAt(capacity, this.alignment);
    this.buffer.copy(grown, 0, 0, this.buffer.length);
    this.buffer = grown;
    this.view = viewOf(grown);
  }
}

/**
 * A zero-filled buffer (not allocUnsafe: setPosition/skipBytesToWrite may expose bytes never
 * written, and those must not be leftovers of unrelated memory) whose first byte's address is
 * `alignment` modulo 8. An ArrayBuffer's memory starts at least 8-byte aligned.
 */
function allocateAt(capacity: number, alignment: number): Buffer {
  if (alignment === 0) return Buffer.alloc(capacity);
  return Buffer.from(new ArrayBuffer(capacity + alignment), alignment, capacity);
}

function viewOf(buffer: Buffer): DataView {
  return new DataView(buffer.buffer, buffer.byteOffset, buffer.length);
}

/** Throws unless `[offset, offset + length)` is an integer range within `source`. */
function checkByteRange(source: Uint8Array, offset: number, length: number): void {
  if (!isByteRangeWithin(source, offset, length)) {
    throw new IllegalArgumentError(
      `byte range [${offset}, ${offset + length}) out of source [0, ${source.length})`,
    );
  }
}
