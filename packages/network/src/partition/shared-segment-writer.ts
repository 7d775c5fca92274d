import { BufferConsumer, copyBytes, type LocalBufferPool, type NetworkBuffer } from "@sluice/core";

/** Where the writer puts the slices of a sealed segment and what it counts. */
export interface SharedSegmentTarget {
  /** Queues a finished slice of subpartition `subpartition`'s data, in order. */
  addSlice(subpartition: number, consumer: BufferConsumer, partialRecordLength: number): void;
}

/** A region is never smaller than this many bytes: a few small records, or part of a large one. */
const MIN_REGION_BYTES = 64;

/**
 * Regions start at a quarter of a segment's even share per subpartition, so that the segment
 * still has room when the busiest subpartitions ask for more.
 */
const REGION_SHARE_DIVISOR = 4;

/**
 * Writes the records of all subpartitions of a pipelined partition into one shared segment, for
 * an output pool that has fewer buffers than subpartitions (the network memory was short).
 *
 * With one segment per subpartition being written, such a pool holds a segment for only a few
 * subpartitions at a time; nearly every record then goes to a subpartition without one, and the
 * buffers that must be finished to free one carry a record or two each: the per-buffer cost of
 * sending, crediting and recycling then bounds throughput (about 1.2 records per buffer at 64
 * subpartitions and 10 buffers). Here each subpartition writes into a region of the shared
 * segment instead (regions are handed out in order, each further region of the same
 * subpartition twice as large), and when the segment is full, or on flush, it is sealed: every
 * region becomes a read-only slice queued to its subpartition, and the segment returns to the
 * pool when the last slice is recycled. A segment so carries a segment's worth of records, as
 * with ample memory, only spread over many small buffers.
 */
export class SharedSegmentWriter {
  private readonly pool: LocalBufferPool;
  private readonly target: SharedSegmentTarget;
  private readonly numberOfSubpartitions: number;
  /** Size of a subpartition's first region in a segment; known with the first segment. */
  private firstRegionBytes = 0;
  private buffer: NetworkBuffer | undefined;
  private memory: Buffer | undefined;
  private capacity = 0;
  /** End of the regions handed out in the current segment. */
  private used = 0;
  /** Per subpartition, its open region in the current segment: start, write position, end. */
  private readonly regionStart: Int32Array;
  private readonly regionWritten: Int32Array;
  private readonly regionEnd: Int32Array;
  /** Bytes of a record begun earlier that the open region starts with (its partialRecordLength). */
  private readonly regionPartial: Float64Array;
  /** Size of the next region each subpartition gets in the current segment. */
  private readonly nextRegionBytes: Int32Array;
  /** Regions closed before the segment was sealed, as (subpartition, start, length, partial). */
  private readonly closed: number[] = [];
  /** Subpartitions with an open region, in the order they got it. */
  private readonly open: number[] = [];
  private lastRegionOwner = -1;

  constructor(pool: LocalBufferPool, numberOfSubpartitions: number, target: SharedSegmentTarget) {
    this.pool = pool;
    this.target = target;
    this.numberOfSubpartitions = numberOfSubpartitions;
    this.regionStart = new Int32Array(numberOfSubpartitions).fill(-1);
    this.regionWritten = new Int32Array(numberOfSubpartitions);
    this.regionEnd = new Int32Array(numberOfSubpartitions);
    this.regionPartial = new Float64Array(numberOfSubpartitions);
    this.nextRegionBytes = new Int32Array(numberOfSubpartitions);
  }

  /** True while a segment is held: a write can go on at least until it is full. */
  hasSegment(): boolean {
    return this.buffer !== undefined;
  }

  /**
   * Writes as much of `source[offset..]` to `subpartition` as the segment and the pool allow;
   * returns the new offset (short of the end only when the pool has no buffer).
   *
   * @param continuesRecord whether `source[offset]` is not the start of a record (a record
   *   resumed after waiting for a buffer)
   */
  write(
    subpartition: number,
    source: Uint8Array,
    offset: number,
    continuesRecord: boolean,
  ): number {
    let position = offset;
    const length = source.length;
    const written = this.regionWritten;
    const ends = this.regionEnd;
    while (position < length) {
      let room = (ends[subpartition] as number) - (written[subpartition] as number);
      if ((this.regionStart[subpartition] as number) < 0 || room <= 0) {
        const partial = position > offset || continuesRecord ? length - position : 0;
        if (!this.openRegion(subpartition, partial)) return position;
        room = (ends[subpartition] as number) - (written[subpartition] as number);
      }
      const toCopy = Math.min(room, length - position);
      const at = written[subpartition] as number;
      const memory = this.memory as Buffer;
      if (toCopy <= 16) {
        for (let i = 0; i < toCopy; i++) memory[at + i] = source[position + i] as number;
      } else {
        copyBytes(source, memory, at, position, position + toCopy);
      }
      written[subpartition] = at + toCopy;
      position += toCopy;
    }
    return position;
  }

  /**
   * Gives `subpartition` room in the current segment: its open region grows when it is the last
   * one handed out, otherwise it is closed and a new one opens; a full segment is sealed first
   * and a new one requested. False when the pool has none.
   */
  private openRegion(subpartition: number, partialRecordLength: number): boolean {
    if (this.buffer !== undefined && this.capacity - this.used <= 0) this.seal();
    if (this.buffer === undefined && !this.requestSegment()) return false;
    const wanted = this.nextRegionBytes[subpartition] as number;
    const bytes = Math.min(wanted, this.capacity - this.used);
    this.nextRegionBytes[subpartition] = Math.min(wanted * 2, this.capacity);
    if (this.lastRegionOwner === subpartition && (this.regionStart[subpartition] as number) >= 0) {
      // The open region ends where the next would start: extend it instead of slicing twice.
      this.regionEnd[subpartition] = (this.regionEnd[subpartition] as number) + bytes;
      this.used += bytes;
      return true;
    }
    this.closeRegion(subpartition);
    this.regionStart[subpartition] = this.used;
    this.regionWritten[subpartition] = this.used;
    this.regionEnd[subpartition] = this.used + bytes;
    this.regionPartial[subpartition] = partialRecordLength;
    this.open.push(subpartition);
    this.used += bytes;
    this.lastRegionOwner = subpartition;
    return true;
  }

  /** Moves `subpartition`'s open region, if it holds data, to the regions sliced at the seal. */
  private closeRegion(subpartition: number): void {
    const start = this.regionStart[subpartition] as number;
    if (start < 0) return;
    const written = (this.regionWritten[subpartition] as number) - start;
    if (written > 0) {
      this.closed.push(subpartition, start, written, this.regionPartial[subpartition] as number);
    }
    this.regionStart[subpartition] = -1;
    const index = this.open.indexOf(subpartition);
    if (index >= 0) this.open.splice(index, 1);
  }

  private requestSegment(): boolean {
    const buffer = this.pool.requestBuffer();
    if (buffer === undefined) return false;
    this.buffer = buffer;
    this.capacity = buffer.getMaxCapacity();
    if (this.firstRegionBytes === 0) {
      this.firstRegionBytes = Math.max(
        MIN_REGION_BYTES,
        Math.floor(this.capacity / (this.numberOfSubpartitions * REGION_SHARE_DIVISOR)),
      );
      this.nextRegionBytes.fill(this.firstRegionBytes);
    }
    buffer.setSize(this.capacity);
    this.memory = buffer.getMemorySegment().memory;
    this.used = 0;
    this.lastRegionOwner = -1;
    return true;
  }

  /**
   * Seals the current segment: each region with data becomes a finished slice of its
   * subpartition (the regions of one subpartition in the order written), and the writer lets go
   * of the segment, which returns to the pool with its last slice. Nothing to do without one.
   */
  seal(): void {
    const buffer = this.buffer;
    if (buffer === undefined) return;
    const closed = this.closed;
    for (let i = 0; i < closed.length; i += 4) {
      this.addSlice(
        buffer,
        closed[i] as number,
        closed[i + 1] as number,
        closed[i + 2] as number,
        closed[i + 3] as number,
      );
    }
    closed.length = 0;
    for (const subpartition of this.open) {
      const start = this.regionStart[subpartition] as number;
      const written = (this.regionWritten[subpartition] as number) - start;
      if (written > 0) {
        this.addSlice(
          buffer,
          subpartition,
          start,
          written,
          this.regionPartial[subpartition] as number,
        );
      }
      this.regionStart[subpartition] = -1;
    }
    this.open.length = 0;
    this.nextRegionBytes.fill(this.firstRegionBytes);
    this.buffer = undefined;
    this.memory = undefined;
    buffer.recycleBuffer();
  }

  private addSlice(
    buffer: NetworkBuffer,
    subpartition: number,
    start: number,
    length: number,
    partialRecordLength: number,
  ): void {
    const slice = buffer.readOnlySlice(start, length).retainBuffer();
    this.target.addSlice(
      subpartition,
      BufferConsumer.fromFinishedBuffer(slice),
      partialRecordLength,
    );
  }

  /** Drops what was written and not sealed (the partition is released or closed). */
  discard(): void {
    const buffer = this.buffer;
    if (buffer === undefined) return;
    for (const subpartition of this.open) this.regionStart[subpartition] = -1;
    this.open.length = 0;
    this.closed.length = 0;
    this.nextRegionBytes.fill(this.firstRegionBytes);
    this.buffer = undefined;
    this.memory = undefined;
    buffer.recycleBuffer();
  }
}
