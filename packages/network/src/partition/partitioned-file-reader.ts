import {
  type BufferRecycler,
  isSluiceError,
  type MemorySegment,
  NetworkBuffer,
} from "@sluice/core";
import {
  BUFFER_HEADER_LENGTH,
  type BufferHeader,
  type IndexEntry,
  type PartitionedFile,
  payloadChecksum,
  RUN_TRAILER_LENGTH,
} from "./partitioned-file.js";

/** Tail bytes read with a run's trailer at once: enough for the headers of 64 buffers. */
const TAIL_GUESS = RUN_TRAILER_LENGTH + 64 * BUFFER_HEADER_LENGTH;

/**
 * Reads the buffers of one subpartition from a {@link PartitionedFile}, region after region
 * (Flink's PartitionedFileReader). Per run it reads the trailer and headers with one small read,
 * then the payloads in batches with one `readv` each, every payload into its own segment at
 * offset 0 — the buffers go to the network or a local channel as they are. All I/O is
 * asynchronous; one call of `readBuffers` at a time.
 */
export class PartitionedFileReader {
  readonly subpartition: number;
  private readonly file: PartitionedFile;
  /** The next region whose run is to be loaded. */
  private nextRegion = 0;
  private region = -1;
  private headers: BufferHeader[] = [];
  /** Index in `headers` of the next buffer to read. */
  private nextBuffer = 0;
  /** File offset of the next buffer's payload. */
  private nextOffset = 0;

  constructor(file: PartitionedFile, subpartition: number) {
    this.file = file;
    this.subpartition = subpartition;
  }

  /** True while buffers are left to read. */
  hasRemaining(): boolean {
    return this.nextBuffer < this.headers.length || this.nextRegion < this.file.numberOfRegions;
  }

  /**
   * The file offset this reader reads next (for reading in file-offset order); the start of the
   * file before the first run was located.
   */
  getNextOffset(): number {
    return this.nextOffset;
  }

  /**
   * Reads up to `segments.length` buffers of the current run (locating the next non-empty run
   * first when needed) into segments taken from the front of `segments`, and returns them as
   * buffers owned by the caller, recycled to `recycler`. Throws a PartitionFileCorruptedError
   * when the file does not match its layout or ends early.
   */
  async readBuffers(segments: MemorySegment[], recycler: BufferRecycler): Promise<NetworkBuffer[]> {
    if (segments.length === 0 || !(await this.locateRun())) return [];
    const count = Math.min(segments.length, this.headers.length - this.nextBuffer);
    const taken = segments.splice(0, count);
    const views: Buffer[] = [];
    let bytes = 0;
    for (let i = 0; i < count; i++) {
      const length = (this.headers[this.nextBuffer + i] as BufferHeader).length;
      views.push((taken[i] as MemorySegment).memory.subarray(0, length));
      bytes += length;
    }
    const position = this.nextOffset;
    let bytesRead: number;
    try {
      const handle = await this.file.openData();
      ({ bytesRead } = await handle.readv(views, position));
    } catch (error) {
      segments.unshift(...taken);
      throw isSluiceError(error)
        ? error
        : this.file.corrupted(`read at offset ${position} failed`, error);
    }
    if (bytesRead !== bytes) {
      segments.unshift(...taken);
      throw this.file.corrupted(
        `data file ends within region ${this.region}, subpartition ${this.subpartition}: read ${bytesRead} of ${bytes} bytes at offset ${position}`,
      );
    }
    // Every payload is checked before any of them leaves: a changed byte is never delivered.
    let at = position;
    for (let i = 0; i < count; i++) {
      const header = this.headers[this.nextBuffer + i] as BufferHeader;
      const actual = payloadChecksum(views[i] as Buffer);
      if (actual !== header.crc) {
        segments.unshift(...taken);
        throw this.file.corrupted(
          `buffer ${this.nextBuffer + i} of region ${this.region}, subpartition ${this.subpartition} at offset ${at} has CRC32 ${hex(actual)}, but ${hex(header.crc)} was written`,
        );
      }
      at += header.length;
    }
    const buffers: NetworkBuffer[] = [];
    for (let i = 0; i < count; i++) {
      const header = this.headers[this.nextBuffer + i] as BufferHeader;
      buffers.push(
        new NetworkBuffer(
          taken[i] as MemorySegment,
          recycler,
          header.dataType,
          header.length,
          header.isCompressed,
        ),
      );
    }
    this.nextBuffer += count;
    this.nextOffset = position + bytes;
    return buffers;
  }

  /** Makes the current run the one with buffers left; false when the file is done. */
  private async locateRun(): Promise<boolean> {
    while (this.nextBuffer >= this.headers.length) {
      if (this.nextRegion >= this.file.numberOfRegions) return false;
      const region = this.nextRegion++;
      const entry = await this.file.getIndexEntry(region, this.subpartition);
      this.nextOffset = entry.offset;
      if (entry.size === 0) continue;
      this.headers = await this.readHeaders(entry, region);
      this.region = region;
      this.nextBuffer = 0;
    }
    return true;
  }

  private async readHeaders(entry: IndexEntry, region: number): Promise<BufferHeader[]> {
    const handle = await this.file.openData();
    let tailLength = Math.min(entry.size, TAIL_GUESS);
    for (;;) {
      const tail = Buffer.allocUnsafe(tailLength);
      const position = entry.offset + entry.size - tailLength;
      const { bytesRead } = await handle.read(tail, 0, tailLength, position);
      if (bytesRead !== tailLength) {
        throw this.file.corrupted(
          `data file ends within the headers of region ${region}, subpartition ${this.subpartition} (read ${bytesRead} of ${tailLength} bytes at offset ${position})`,
        );
      }
      const parsed = this.file.parseRunHeaders(tail, entry, region, this.subpartition);
      if (typeof parsed !== "number") return parsed;
      tailLength = parsed;
    }
  }
}

function hex(crc: number): string {
  return (crc >>> 0).toString(16).padStart(8, "0");
}
