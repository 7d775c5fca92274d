import { IllegalArgumentError } from "../errors.js";

/**
 * A fixed-size block of memory: the unit a NetworkBufferPool hands out (Flink's MemorySegment).
 *
 * Backed by a Node `Buffer` view so a filled segment can go to a socket with `subarray()` and no
 * copy. Multi-byte accessors are big-endian, the byte order of the wire protocol and the record
 * format. Accessors are bounds-checked by the underlying Buffer methods (a RangeError on overflow).
 */
export class MemorySegment {
  /** The segment's bytes. Never replaced; views share this memory. */
  readonly memory: Buffer;
  /** Capacity in bytes. */
  readonly size: number;
  /** The object that owns this segment (a pool), for debugging and ownership checks. */
  owner: unknown;

  private constructor(memory: Buffer, owner: unknown) {
    this.memory = memory;
    this.size = memory.length;
    this.owner = owner;
  }

  /** Wraps existing memory (no copy). */
  static wrap(memory: Buffer, owner: unknown = null): MemorySegment {
    return new MemorySegment(memory, owner);
  }

  /**
   * Allocates a segment outside any pool: used for events and other exact-size buffers that hold
   * no credit (Flink's unpooled heap segments). Zero-filled.
   */
  static allocateUnpooled(size: number, owner: unknown = null): MemorySegment {
    if (!Number.isInteger(size) || size < 0) {
      throw new IllegalArgumentError(`segment size must be a non-negative integer, got ${size}`);
    }
    return new MemorySegment(Buffer.alloc(size), owner);
  }

  get(index: number): number {
    const value = this.memory[index];
    if (value === undefined) throw new RangeError(`index ${index} out of [0, ${this.size})`);
    return value;
  }

  put(index: number, value: number): void {
    if (index < 0 || index >= this.size) {
      throw new RangeError(`index ${index} out of [0, ${this.size})`);
    }
    this.memory[index] = value;
  }

  getInt(index: number): number {
    return this.memory.readInt32BE(index);
  }

  putInt(index: number, value: number): void {
    this.memory.writeInt32BE(value | 0, index);
  }

  getLong(index: number): bigint {
    return this.memory.readBigInt64BE(index);
  }

  putLong(index: number, value: bigint): void {
    this.memory.writeBigInt64BE(value, index);
  }

  /** Copies `length` bytes of `source` from `sourceOffset` into this segment at `offset`. */
  putBytes(offset: number, source: Uint8Array, sourceOffset: number, length: number): void {
    this.checkRange(offset, length);
    this.memory.set(source.subarray(sourceOffset, sourceOffset + length), offset);
  }

  /** Copies `length` bytes at `offset` into `target` at `targetOffset`. */
  getBytes(offset: number, target: Uint8Array, targetOffset: number, length: number): void {
    this.checkRange(offset, length);
    target.set(this.memory.subarray(offset, offset + length), targetOffset);
  }

  /** Copies `length` bytes from this segment at `offset` into `target` at `targetOffset`. */
  copyTo(offset: number, target: MemorySegment, targetOffset: number, length: number): void {
    this.checkRange(offset, length);
    target.checkRange(targetOffset, length);
    this.memory.copy(target.memory, targetOffset, offset, offset + length);
  }

  /** A view (no copy) of `[offset, offset + length)`. */
  wrapView(offset: number, length: number): Buffer {
    this.checkRange(offset, length);
    return this.memory.subarray(offset, offset + length);
  }

  private checkRange(offset: number, length: number): void {
    if (offset < 0 || length < 0 || offset + length > this.size) {
      throw new RangeError(
        `range [${offset}, ${offset + length}) out of segment [0, ${this.size})`,
      );
    }
  }
}
