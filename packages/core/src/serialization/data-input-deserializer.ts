import { IllegalArgumentError, SerializationError } from "../errors.js";
import { copyBytes } from "../memory/shared-memory-copy.js";
import { isByteRangeWithin } from "./byte-range.js";

const EMPTY = Buffer.alloc(0);
const EMPTY_VIEW = new DataView(new ArrayBuffer(0));
/** Views of memory larger than this are dropped by `releaseBuffer` (see there). */
const RETAINED_VIEW_BYTES = 64 * 1024;
/** Copies up to this many bytes with a loop rather than Buffer.copy (see readFullyInto). */
const SHORT_COPY = 256;

/** Wraps a Uint8Array as a Buffer over the same memory (no copy), for Buffer's readers. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/**
 * A big-endian reader over a window `[start, end)` of a byte array (Flink's DataInputDeserializer),
 * the counterpart of {@link DataOutputSerializer}. One instance is reused for many records: the
 * record deserializer points it at each record's bytes with `setBuffer` and allocates nothing.
 *
 * Reading past the window's end throws {@link SerializationError} naming how many bytes were
 * needed, how many were left, and at which position — a truncated or corrupt record, or a
 * serializer that does not match the writer's.
 */
export class DataInputDeserializer {
  private buffer: Buffer = EMPTY;
  private pos = 0;
  private end = 0;
  /**
   * A DataView of the last Buffer `readLong` read from (its bigint accessors are several times
   * faster than Buffer's), kept across records of the same memory.
   */
  private view: DataView = EMPTY_VIEW;
  private viewOf: Buffer = EMPTY;

  /** Optionally starts on `bytes[start, end)`; see {@link DataInputDeserializer.setBuffer}. */
  constructor(bytes?: Uint8Array, start?: number, end?: number) {
    if (bytes !== undefined) this.setBuffer(bytes, start, end);
  }

  /** Reads `bytes[start, end)` from now on (no copy; the caller keeps the bytes alive). */
  setBuffer(bytes: Uint8Array, start = 0, end: number = bytes.length): void {
    if (
      !Number.isInteger(start) ||
      !Number.isInteger(end) ||
      start < 0 ||
      end < start ||
      end > bytes.length
    ) {
      throw new IllegalArgumentError(
        `window [${start}, ${end}) out of the ${bytes.length} bytes given`,
      );
    }
    this.buffer = asBuffer(bytes);
    this.pos = start;
    this.end = end;
  }

  /**
   * `setBuffer` for callers that pass a Buffer and a window they already validated (the record
   * deserializer, once per record): no checks, no wrapping.
   */
  setTrustedBuffer(buffer: Buffer, start: number, end: number): void {
    this.buffer = buffer;
    this.pos = start;
    this.end = end;
  }

  /** Drops the reference to the current bytes (so they can be collected); reads then fail. */
  releaseBuffer(): void {
    this.buffer = EMPTY;
    this.pos = 0;
    this.end = 0;
    // A view of network segments is kept for the next record; one of a large gathered or spilled
    // record is not, so it does not pin that memory.
    if (this.viewOf.length > RETAINED_VIEW_BYTES) {
      this.view = EMPTY_VIEW;
      this.viewOf = EMPTY;
    }
  }

  /** The read position, as an index into the array given to `setBuffer`. */
  get position(): number {
    return this.pos;
  }

  /** Bytes left between the read position and the window's end. */
  available(): number {
    return this.end - this.pos;
  }

  /** Skips exactly `count` bytes. */
  skipBytes(count: number): void {
    if (!Number.isInteger(count) || count < 0) {
      throw new IllegalArgumentError(`bytes to skip must be a non-negative integer, got ${count}`);
    }
    this.need(count);
    this.pos += count;
  }

  /** Reads a signed byte. */
  readByte(): number {
    this.need(1);
    return ((this.buffer[this.pos++] as number) << 24) >> 24;
  }

  /** Reads an unsigned byte. */
  readUnsignedByte(): number {
    this.need(1);
    return this.buffer[this.pos++] as number;
  }

  /** Reads a byte; any non-zero value is true (`java.io.DataInput.readBoolean`). */
  readBoolean(): boolean {
    this.need(1);
    return this.buffer[this.pos++] !== 0;
  }

  /** Reads a signed 16-bit integer. */
  readShort(): number {
    this.need(2);
    const value = this.buffer.readInt16BE(this.pos);
    this.pos += 2;
    return value;
  }

  /** Reads an unsigned 16-bit integer. */
  readUnsignedShort(): number {
    this.need(2);
    const value = this.buffer.readUInt16BE(this.pos);
    this.pos += 2;
    return value;
  }

  /** Reads one UTF-16 code unit written by `writeChar` (as a number). */
  readChar(): number {
    return this.readUnsignedShort();
  }

  /** Reads a signed 32-bit integer. */
  readInt(): number {
    this.need(4);
    const value = this.buffer.readInt32BE(this.pos);
    this.pos += 4;
    return value;
  }

  /** Reads a signed 64-bit integer. */
  readLong(): bigint {
    this.need(8);
    const buffer = this.buffer;
    if (buffer !== this.viewOf) {
      this.view = new DataView(buffer.buffer, buffer.byteOffset, buffer.length);
      this.viewOf = buffer;
    }
    const value = this.view.getBigInt64(this.pos);
    this.pos += 8;
    return value;
  }

  /** Reads an IEEE 754 single. */
  readFloat(): number {
    this.need(4);
    const value = this.buffer.readFloatBE(this.pos);
    this.pos += 4;
    return value;
  }

  /** Reads an IEEE 754 double. */
  readDouble(): number {
    this.need(8);
    const value = this.buffer.readDoubleBE(this.pos);
    this.pos += 8;
    return value;
  }

  /**
   * Reads exactly `count` bytes and returns them as a view (no copy) that is valid only as long
   * as the underlying bytes are: copy it if the value outlives the record.
   */
  readFully(count: number): Uint8Array {
    if (!Number.isInteger(count) || count < 0) {
      throw new IllegalArgumentError(`bytes to read must be a non-negative integer, got ${count}`);
    }
    this.need(count);
    const start = this.pos;
    this.pos += count;
    // A plain Uint8Array, not Buffer#subarray: a Buffer is a subclass, whose construction V8
    // does not inline, and this runs once per byte-array record.
    const buffer = this.buffer;
    return new Uint8Array(buffer.buffer, buffer.byteOffset + start, count);
  }

  /**
   * Reads exactly `count` bytes into `target` at `offset` (a copy the caller owns, into memory
   * it reuses): the non-allocating counterpart of {@link readFully} for `deserializeInto`.
   */
  readFullyInto(target: Uint8Array, offset: number, count: number): void {
    if (!isByteRangeWithin(target, offset, count)) {
      throw new IllegalArgumentError(
        `cannot read ${count} bytes into [${offset}, ${offset + count}) of a ${target.length}-byte target`,
      );
    }
    this.need(count);
    const buffer = this.buffer;
    const start = this.pos;
    if (count <= SHORT_COPY) {
      // A byte loop: Node 20's Buffer.copy of a sub-range allocates a view per call.
      for (let i = 0; i < count; i++) target[offset + i] = buffer[start + i] as number;
    } else {
      copyBytes(buffer, target, offset, start, start + count);
    }
    this.pos = start + count;
  }

  /**
   * Reads a string in Java's modified UTF-8 (2-byte length, see
   * {@link DataOutputSerializer.writeUTF}). Malformed sequences throw {@link SerializationError}.
   */
  readUTF(): string {
    const length = this.readUnsignedShort();
    const lengthAt = this.pos - 2;
    this.need(length);
    const buffer = this.buffer;
    const start = this.pos;
    const end = start + length;
    let i = start;
    while (i < end && (buffer[i] as number) < 0x80) i++;
    if (i === end) {
      // Pure ASCII (the common case for class names): one native decode.
      this.pos = end;
      return buffer.toString("latin1", start, end);
    }
    const units: number[] = [];
    for (let j = start; j < i; j++) units.push(buffer[j] as number);
    while (i < end) {
      const a = buffer[i] as number;
      if (a < 0x80) {
        // Java's encoder never writes a raw 0 byte, but its decoder accepts one; so do we.
        units.push(a);
        i += 1;
      } else if ((a & 0xe0) === 0xc0) {
        if (i + 2 > end) throw this.malformedUtf(i, lengthAt, "a truncated 2-byte sequence");
        const b = buffer[i + 1] as number;
        if ((b & 0xc0) !== 0x80) throw this.malformedUtf(i, lengthAt, "a bad continuation byte");
        units.push(((a & 0x1f) << 6) | (b & 0x3f));
        i += 2;
      } else if ((a & 0xf0) === 0xe0) {
        if (i + 3 > end) throw this.malformedUtf(i, lengthAt, "a truncated 3-byte sequence");
        const b = buffer[i + 1] as number;
        const c = buffer[i + 2] as number;
        if ((b & 0xc0) !== 0x80 || (c & 0xc0) !== 0x80) {
          throw this.malformedUtf(i, lengthAt, "a bad continuation byte");
        }
        units.push(((a & 0x0f) << 12) | ((b & 0x3f) << 6) | (c & 0x3f));
        i += 3;
      } else {
        throw this.malformedUtf(i, lengthAt, `the invalid lead byte 0x${a.toString(16)}`);
      }
    }
    this.pos = end;
    let result = "";
    // fromCharCode takes arguments on the stack: decode in chunks to stay far from its limit.
    for (let k = 0; k < units.length; k += 8192) {
      result += String.fromCharCode(...units.slice(k, k + 8192));
    }
    return result;
  }

  /**
   * Reads a string written by {@link DataOutputSerializer.writeString}: an int32 byte count and
   * UTF-8 bytes. Invalid UTF-8 decodes to U+FFFD, as Node's decoder does.
   */
  readString(): string {
    const length = this.readInt();
    if (length < 0) {
      throw new SerializationError(
        `negative string length ${length} at position ${this.pos - 4}: corrupt input or a ` +
          "serializer that does not match the writer",
      );
    }
    this.need(length);
    const start = this.pos;
    this.pos += length;
    return this.buffer.toString("utf8", start, this.pos);
  }

  private need(count: number): void {
    if (this.end - this.pos < count) {
      throw new SerializationError(
        `cannot read ${count} bytes at position ${this.pos}: only ${this.end - this.pos} of the ` +
          "input are left (truncated or corrupt input, or a serializer that does not match the writer)",
      );
    }
  }

  private malformedUtf(at: number, lengthAt: number, what: string): SerializationError {
    return new SerializationError(
      `malformed modified UTF-8 at position ${at} (string length at ${lengthAt}): ${what}`,
    );
  }
}
