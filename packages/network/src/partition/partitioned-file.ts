import { type FileHandle, open, rm } from "node:fs/promises";
import { DataType, isBufferType, MAX_DATA_TYPE, PartitionFileCorruptedError } from "@sluice/core";
import type { BatchShuffleCounters } from "./batch-shuffle-counters.js";
import { crc32 } from "./crc32.js";

/**
 * The files of one sort-merge partition (Flink's PartitionedFile): a data file and an index file.
 *
 * Data file `<base>.shuffle.data`: regions, one per spill of the sort buffer (and one per large
 * record or event). In a region, each subpartition's buffers form one contiguous **run**; a
 * broadcast region holds a single run that every subpartition reads. A run is
 *
 * | bytes | content |
 * | --- | --- |
 * | Σ length | the buffers' payloads, back to back |
 * | 12 × n | one header per buffer: int16 data type (`DataType`), int16 compressed (0/1), int32 length, uint32 CRC32 of the payload |
 * | 4 | int32 n, the number of buffers |
 *
 * (all big-endian). Flink puts each header in front of its buffer; Sluice puts a run's headers
 * after its payloads, so a reader learns every length of a run from one small read and then reads
 * many payloads with one `readv`, each straight into its own segment. Flink's header has no
 * checksum; Sluice's carries each payload's CRC32, and a reader checks it before the buffer leaves
 * for a consumer, so a byte that changed on disk is never delivered (its framing may be intact).
 *
 * Index file `<base>.shuffle.index`: per region, per subpartition, 16 bytes: int64 file offset
 * and int64 size of that subpartition's run (size 0: no data in that region). The entry of
 * (region r, subpartition s) is at (r × subpartitions + s) × 16.
 */
export const DATA_FILE_SUFFIX = ".shuffle.data";
/** Suffix of the index file. */
export const INDEX_FILE_SUFFIX = ".shuffle.index";
/** Bytes of one buffer header in a run. */
export const BUFFER_HEADER_LENGTH = 12;
/** Bytes of a run's trailer (its buffer count). */
export const RUN_TRAILER_LENGTH = 4;
/** Bytes of one index entry. */
export const INDEX_ENTRY_LENGTH = 16;

/** One buffer of a run, as its header describes it. */
export interface BufferHeader {
  readonly dataType: DataType;
  readonly isCompressed: boolean;
  readonly length: number;
  /** CRC32 of the payload as it was written. */
  readonly crc: number;
}

/** Where a subpartition's run of one region lies in the data file. */
export interface IndexEntry {
  readonly offset: number;
  readonly size: number;
}

/** Writes one buffer header at `offset` of `target`. */
export function writeBufferHeader(target: Buffer, offset: number, header: BufferHeader): void {
  target.writeInt16BE(header.dataType, offset);
  target.writeInt16BE(header.isCompressed ? 1 : 0, offset + 2);
  target.writeInt32BE(header.length, offset + 4);
  target.writeUInt32BE(header.crc >>> 0, offset + 8);
}

/** The CRC32 a buffer header carries for `payload`. */
export function payloadChecksum(payload: Uint8Array): number {
  return crc32(payload);
}

/** Writes one index entry at `offset` of `target`. */
export function writeIndexEntry(target: Buffer, offset: number, entry: IndexEntry): void {
  target.writeBigInt64BE(BigInt(entry.offset), offset);
  target.writeBigInt64BE(BigInt(entry.size), offset + 8);
}

/**
 * A finished partitioned file, shared by every reader of the partition. File handles are opened
 * on the first read and shared (positional reads need no per-reader handle).
 */
export class PartitionedFile {
  readonly dataFilePath: string;
  readonly indexFilePath: string;
  readonly numberOfRegions: number;
  readonly numberOfSubpartitions: number;
  /** Bytes of the data file as written. */
  readonly dataFileSize: number;
  /** Largest buffer a run may hold (the segment size). */
  readonly maxBufferLength: number;
  /** The index entries (offset, size pairs) when they were small enough to keep in memory. */
  private readonly indexCache: Float64Array | undefined;
  private readonly counters: BatchShuffleCounters | undefined;
  private deleted = false;
  private dataHandle: Promise<FileHandle> | undefined;
  private indexHandle: Promise<FileHandle> | undefined;
  private closed = false;

  constructor(options: {
    readonly basePath: string;
    readonly numberOfRegions: number;
    readonly numberOfSubpartitions: number;
    readonly dataFileSize: number;
    readonly maxBufferLength: number;
    readonly indexCache: Float64Array | undefined;
    /** The worker's batch-shuffle counters, which count the deletion. */
    readonly counters?: BatchShuffleCounters | undefined;
  }) {
    this.dataFilePath = options.basePath + DATA_FILE_SUFFIX;
    this.indexFilePath = options.basePath + INDEX_FILE_SUFFIX;
    this.numberOfRegions = options.numberOfRegions;
    this.numberOfSubpartitions = options.numberOfSubpartitions;
    this.dataFileSize = options.dataFileSize;
    this.maxBufferLength = options.maxBufferLength;
    this.indexCache = options.indexCache;
    this.counters = options.counters;
  }

  /** The run of `subpartition` in `region`, from the cache or the index file; validated. */
  async getIndexEntry(region: number, subpartition: number): Promise<IndexEntry> {
    const slot = region * this.numberOfSubpartitions + subpartition;
    let offset: number;
    let size: number;
    if (this.indexCache !== undefined) {
      offset = this.indexCache[2 * slot] as number;
      size = this.indexCache[2 * slot + 1] as number;
    } else {
      const entry = Buffer.allocUnsafe(INDEX_ENTRY_LENGTH);
      const handle = await this.openIndex();
      const { bytesRead } = await handle.read(
        entry,
        0,
        INDEX_ENTRY_LENGTH,
        slot * INDEX_ENTRY_LENGTH,
      );
      if (bytesRead !== INDEX_ENTRY_LENGTH) {
        throw this.corrupted(
          `index file ends before the entry of region ${region}, subpartition ${subpartition}`,
        );
      }
      offset = Number(entry.readBigInt64BE(0));
      size = Number(entry.readBigInt64BE(8));
    }
    if (offset < 0 || size < 0 || offset + size > this.dataFileSize) {
      throw this.corrupted(
        `index entry of region ${region}, subpartition ${subpartition} points at [${offset}, ${offset + size}) outside the ${this.dataFileSize}-byte data file`,
      );
    }
    if (size > 0 && size < RUN_TRAILER_LENGTH + BUFFER_HEADER_LENGTH + 1) {
      throw this.corrupted(
        `run of region ${region}, subpartition ${subpartition} has ${size} bytes, too few for one buffer`,
      );
    }
    return { offset, size };
  }

  /**
   * Parses the buffer headers of a run from `tail` (the run's last bytes, its trailer included).
   * Returns the headers, or the number of tail bytes needed when `tail` is too short.
   */
  parseRunHeaders(
    tail: Buffer,
    entry: IndexEntry,
    region: number,
    subpartition: number,
  ): BufferHeader[] | number {
    const where = `run of region ${region}, subpartition ${subpartition} at offset ${entry.offset}`;
    const count = tail.readInt32BE(tail.length - RUN_TRAILER_LENGTH);
    const headerBytes = BUFFER_HEADER_LENGTH * count;
    if (count < 1 || RUN_TRAILER_LENGTH + headerBytes + count > entry.size) {
      throw this.corrupted(`${where}: buffer count ${count} does not fit its ${entry.size} bytes`);
    }
    if (RUN_TRAILER_LENGTH + headerBytes > tail.length) return RUN_TRAILER_LENGTH + headerBytes;
    const start = tail.length - RUN_TRAILER_LENGTH - headerBytes;
    const headers: BufferHeader[] = new Array(count);
    let payload = 0;
    for (let i = 0; i < count; i++) {
      const at = start + i * BUFFER_HEADER_LENGTH;
      const dataType = tail.readInt16BE(at);
      const compressed = tail.readInt16BE(at + 2);
      const length = tail.readInt32BE(at + 4);
      if (dataType <= DataType.NONE || dataType > MAX_DATA_TYPE) {
        throw this.corrupted(`${where}: buffer ${i} has data type ${dataType}`);
      }
      if (compressed !== 0 && (compressed !== 1 || !isBufferType(dataType))) {
        throw this.corrupted(
          `${where}: buffer ${i} (${DataType[dataType]}) has compressed flag ${compressed}`,
        );
      }
      if (length < 1 || length > this.maxBufferLength) {
        throw this.corrupted(
          `${where}: buffer ${i} has length ${length}, outside [1, ${this.maxBufferLength}]`,
        );
      }
      payload += length;
      headers[i] = {
        dataType,
        isCompressed: compressed === 1,
        length,
        crc: tail.readUInt32BE(at + 8),
      };
    }
    if (payload + headerBytes + RUN_TRAILER_LENGTH !== entry.size) {
      throw this.corrupted(
        `${where}: ${count} buffers of ${payload} bytes plus headers do not add up to the run's ${entry.size} bytes`,
      );
    }
    return headers;
  }

  /** The shared handle of the data file. */
  openData(): Promise<FileHandle> {
    if (this.closed) return Promise.reject(this.corrupted("the partition file was deleted"));
    this.dataHandle ??= this.openFile(this.dataFilePath);
    return this.dataHandle;
  }

  private openIndex(): Promise<FileHandle> {
    if (this.closed) return Promise.reject(this.corrupted("the partition file was deleted"));
    this.indexHandle ??= this.openFile(this.indexFilePath);
    return this.indexHandle;
  }

  /**
   * Opens one of the files for reading. A file that is gone (deleted under the worker, a disk
   * unmounted) is damage like a truncated one: the readers fail with the partition file error, a
   * partition exception, so the job side produces the partition again.
   */
  private openFile(path: string): Promise<FileHandle> {
    return open(path, "r").catch((error: unknown) => {
      throw this.corrupted(
        `cannot open ${path === this.dataFilePath ? "the data file" : `the index file ${path}`} (${(error as Error).message})`,
        error,
      );
    });
  }

  /** A {@link PartitionFileCorruptedError} naming this file. */
  corrupted(what: string, cause?: unknown): Error {
    return new PartitionFileCorruptedError(`${this.dataFilePath}: ${what}`, { cause });
  }

  /** Closes the handles and deletes both files. Idempotent; rejects when a file cannot be deleted. */
  async delete(): Promise<void> {
    this.closed = true;
    const handles = [this.dataHandle, this.indexHandle];
    this.dataHandle = undefined;
    this.indexHandle = undefined;
    for (const handle of handles) {
      if (handle === undefined) continue;
      // A handle that never opened has nothing to close; its error was reported to the reader.
      const opened = await handle.catch(() => undefined);
      await opened?.close();
    }
    await rm(this.dataFilePath, { force: true });
    await rm(this.indexFilePath, { force: true });
    if (!this.deleted && this.counters !== undefined) this.counters.filesDeleted += 2;
    this.deleted = true;
  }

  toString(): string {
    return `PartitionedFile(${this.dataFilePath}, regions=${this.numberOfRegions}, subpartitions=${this.numberOfSubpartitions})`;
  }
}
