import { type FileHandle, open, rm } from "node:fs/promises";
import { IllegalStateError, type NetworkBuffer, PartitionFileWriteError } from "@sluice/core";
import type { BatchShuffleCounters } from "./batch-shuffle-counters.js";
import {
  BUFFER_HEADER_LENGTH,
  type BufferHeader,
  DATA_FILE_SUFFIX,
  INDEX_ENTRY_LENGTH,
  INDEX_FILE_SUFFIX,
  PartitionedFile,
  payloadChecksum,
  RUN_TRAILER_LENGTH,
  writeBufferHeader,
  writeIndexEntry,
} from "./partitioned-file.js";

/** Index entries up to this size stay in memory for the readers (Flink's 4 MiB index cache). */
const MAX_INDEX_CACHE_BYTES = 4 * 1024 * 1024;
/** `writev` takes at most this many buffers per call (IOV_MAX on Linux). */
const MAX_IOVECS = 1024;
/**
 * Index entries are kept in memory and appended to the index file when this many bytes of them
 * wait, and when the file is finished (as Flink's writer buffers its index): the index file is
 * read only once the partition is finished, and every file write is a round trip through the
 * libuv thread pool that the spill waits for.
 */
const MAX_PENDING_INDEX_BYTES = 1024 * 1024;
/** Owner-only: other users of the machine must not read shuffle data. */
const FILE_MODE = 0o600;

/**
 * Writes a {@link PartitionedFile} (Flink's PartitionedFileWriter): regions of runs, appended
 * strictly sequentially with `writev`, each run's payloads followed by its headers and count in
 * one buffer, so that a region of up to a thousand buffers is one `writev`; and the index entries,
 * buffered in memory up to 1 MiB and appended to the index file then and at `finish()`. Both
 * files are created exclusively (`wx`, never through an existing file or link) with mode 0600.
 *
 * Calls are sequential: `startRegion`, then per run `startRun` / `appendBuffer`… / `endRun`,
 * then `endRegion()`; `flush()` may be awaited in between to reuse the memory of appended
 * buffers. Appended buffers must stay untouched until the next `flush()` resolved.
 */
export class PartitionedFileWriter {
  readonly basePath: string;
  private readonly numberOfSubpartitions: number;
  private readonly maxBufferLength: number;
  private readonly counters: BatchShuffleCounters | undefined;
  /** Files this writer created (and so deletes on abort). */
  private createdFiles = 0;
  private dataFile: FileHandle | undefined;
  private indexFile: FileHandle | undefined;
  /** Where the next byte of the data file goes. */
  private dataPosition = 0;
  /** Bytes queued in `pending`, which start at `dataPosition`. */
  private pendingBytes = 0;
  private readonly pending: Uint8Array[] = [];
  private numberOfRegions = 0;
  private regionOpen = false;
  private isBroadcastRegion = false;
  private readonly runOffsets: number[];
  private readonly runSizes: number[];
  private runSubpartition = -1;
  private runStart = 0;
  private runHeaders: BufferHeader[] = [];
  /** Index entries not written yet, which go to the index file at `indexPosition`. */
  private readonly pendingIndex: Buffer[] = [];
  private pendingIndexBytes = 0;
  private indexPosition = 0;
  private indexCache: number[] | undefined = [];
  private finished = false;

  /** @param counters the worker's batch-shuffle counters, which count the files and bytes. */
  constructor(
    basePath: string,
    numberOfSubpartitions: number,
    maxBufferLength: number,
    counters?: BatchShuffleCounters,
  ) {
    this.basePath = basePath;
    this.counters = counters;
    this.numberOfSubpartitions = numberOfSubpartitions;
    this.maxBufferLength = maxBufferLength;
    this.runOffsets = new Array<number>(numberOfSubpartitions).fill(0);
    this.runSizes = new Array<number>(numberOfSubpartitions).fill(0);
  }

  /** Creates both files. Called before the first region. */
  async open(): Promise<void> {
    if (this.dataFile !== undefined) return;
    this.dataFile = await openNew(this.basePath + DATA_FILE_SUFFIX);
    this.fileCreated();
    try {
      this.indexFile = await openNew(this.basePath + INDEX_FILE_SUFFIX);
      this.fileCreated();
    } catch (error) {
      await this.dataFile.close();
      throw error;
    }
  }

  /** Starts a region; a broadcast region holds one run that every subpartition reads. */
  startRegion(isBroadcast: boolean): void {
    if (this.regionOpen) throw new IllegalStateError("the previous region was not ended");
    this.checkOpen();
    this.regionOpen = true;
    this.isBroadcastRegion = isBroadcast;
    this.runOffsets.fill(this.dataPosition + this.pendingBytes);
    this.runSizes.fill(0);
  }

  /** Starts the run of `subpartition` (ignored in a broadcast region). */
  startRun(subpartition: number): void {
    if (!this.regionOpen || this.runSubpartition !== -1) {
      throw new IllegalStateError("startRun outside a region or inside another run");
    }
    this.runSubpartition = this.isBroadcastRegion ? 0 : subpartition;
    this.runStart = this.dataPosition + this.pendingBytes;
    this.runHeaders = [];
  }

  /** Queues one buffer of the current run; its memory must stay untouched until `flush()`. */
  appendBuffer(buffer: NetworkBuffer): void {
    if (this.runSubpartition === -1) throw new IllegalStateError("appendBuffer outside a run");
    const payload = buffer.readableView();
    if (payload.length < 1 || payload.length > this.maxBufferLength) {
      throw new IllegalStateError(
        `a run buffer has ${payload.length} bytes, outside [1, ${this.maxBufferLength}]`,
      );
    }
    this.runHeaders.push({
      dataType: buffer.getDataType(),
      isCompressed: buffer.isCompressed(),
      length: payload.length,
      crc: payloadChecksum(payload),
    });
    this.queue(payload);
  }

  /** Ends the current run: queues its headers and its buffer count, as one buffer. */
  endRun(): void {
    const subpartition = this.runSubpartition;
    if (subpartition === -1) throw new IllegalStateError("endRun outside a run");
    this.runSubpartition = -1;
    const headers = this.runHeaders;
    if (headers.length === 0) return;
    const tail = Buffer.allocUnsafe(headers.length * BUFFER_HEADER_LENGTH + RUN_TRAILER_LENGTH);
    for (let i = 0; i < headers.length; i++) {
      writeBufferHeader(tail, i * BUFFER_HEADER_LENGTH, headers[i] as BufferHeader);
    }
    tail.writeInt32BE(headers.length, headers.length * BUFFER_HEADER_LENGTH);
    this.queue(tail);
    this.runHeaders = [];
    const end = this.dataPosition + this.pendingBytes;
    if (this.isBroadcastRegion) {
      this.runOffsets.fill(this.runStart);
      this.runSizes.fill(end - this.runStart);
    } else {
      this.runOffsets[subpartition] = this.runStart;
      this.runSizes[subpartition] = end - this.runStart;
    }
  }

  /** Writes everything queued; afterwards the appended buffers' memory may be reused. */
  async flush(): Promise<void> {
    const file = this.dataFile;
    if (file === undefined) throw new IllegalStateError("the partitioned file is not open");
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_IOVECS);
      let bytes = 0;
      for (const chunk of batch) bytes += chunk.length;
      await writeFully(this.basePath + DATA_FILE_SUFFIX, file, batch, bytes, this.dataPosition);
      if (this.counters !== undefined) this.counters.fileBytesWritten += bytes;
      this.dataPosition += bytes;
      this.pendingBytes -= bytes;
    }
  }

  /**
   * Flushes the data and adds the region's index entries; they are appended to the index file
   * once 1 MiB of them waits, or by `finish()`.
   */
  async endRegion(): Promise<void> {
    if (!this.regionOpen || this.runSubpartition !== -1) {
      throw new IllegalStateError("endRegion outside a region or inside a run");
    }
    await this.flush();
    const n = this.numberOfSubpartitions;
    const entries = Buffer.allocUnsafe(n * INDEX_ENTRY_LENGTH);
    for (let s = 0; s < n; s++) {
      const entry = { offset: this.runOffsets[s] as number, size: this.runSizes[s] as number };
      writeIndexEntry(entries, s * INDEX_ENTRY_LENGTH, entry);
      this.indexCache?.push(entry.offset, entry.size);
    }
    if (this.indexCache !== undefined && this.indexCache.length * 8 > MAX_INDEX_CACHE_BYTES) {
      this.indexCache = undefined; // readers read the index file instead
    }
    this.pendingIndex.push(entries);
    this.pendingIndexBytes += entries.length;
    this.numberOfRegions++;
    this.regionOpen = false;
    if (this.pendingIndexBytes >= MAX_PENDING_INDEX_BYTES) await this.flushIndex();
  }

  /** Appends the waiting index entries to the index file. */
  private async flushIndex(): Promise<void> {
    if (this.pendingIndex.length === 0) return;
    // One buffer: a region's entries are small, and there may be more regions than iovecs.
    const entries = Buffer.concat(this.pendingIndex.splice(0), this.pendingIndexBytes);
    const bytes = entries.length;
    this.pendingIndexBytes = 0;
    await writeFully(
      this.basePath + INDEX_FILE_SUFFIX,
      this.indexFile as FileHandle,
      [entries],
      bytes,
      this.indexPosition,
    );
    this.indexPosition += bytes;
    if (this.counters !== undefined) this.counters.fileBytesWritten += bytes;
  }

  /** Closes both files and describes them for the readers. */
  async finish(): Promise<PartitionedFile> {
    if (this.regionOpen) throw new IllegalStateError("finish() inside a region");
    this.checkOpen();
    this.finished = true;
    try {
      await this.flushIndex();
    } catch (error) {
      await this.closeFiles();
      throw error;
    }
    await this.closeFiles();
    return new PartitionedFile({
      basePath: this.basePath,
      numberOfRegions: this.numberOfRegions,
      numberOfSubpartitions: this.numberOfSubpartitions,
      dataFileSize: this.dataPosition,
      maxBufferLength: this.maxBufferLength,
      counters: this.counters,
      indexCache: this.indexCache === undefined ? undefined : Float64Array.from(this.indexCache),
    });
  }

  /** Closes and deletes the files without finishing them (the partition was released). */
  async abort(): Promise<void> {
    this.finished = true;
    this.pending.length = 0;
    this.pendingIndex.length = 0;
    this.pendingIndexBytes = 0;
    await this.closeFiles();
    await rm(this.basePath + DATA_FILE_SUFFIX, { force: true });
    await rm(this.basePath + INDEX_FILE_SUFFIX, { force: true });
    if (this.counters !== undefined) this.counters.filesDeleted += this.createdFiles;
    this.createdFiles = 0;
  }

  private fileCreated(): void {
    this.createdFiles++;
    if (this.counters !== undefined) this.counters.filesCreated++;
  }

  private async closeFiles(): Promise<void> {
    const files = [this.dataFile, this.indexFile];
    this.dataFile = undefined;
    this.indexFile = undefined;
    for (const file of files) await file?.close();
  }

  private queue(chunk: Uint8Array): void {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
  }

  private checkOpen(): void {
    if (this.finished) throw new IllegalStateError("the partitioned file is already finished");
    if (this.dataFile === undefined) throw new IllegalStateError("open() the writer first");
  }
}

/**
 * The error for a partition file that could not be created or written. It names the file, which
 * is inside a folder of `io.tmp.dirs`: a full or read-only disk is the usual cause, and the
 * operator needs to know which one.
 */
function writeFailure(path: string, error: unknown): PartitionFileWriteError {
  const reason = error instanceof Error ? error.message : String(error);
  return new PartitionFileWriteError(
    `cannot write the partition file ${path} (in a folder of io.tmp.dirs): ${reason}`,
    { cause: error },
  );
}

/** Creates a partition file exclusively (never through an existing file or link), owner-only. */
async function openNew(path: string): Promise<FileHandle> {
  try {
    return await open(path, "wx", FILE_MODE);
  } catch (error) {
    throw writeFailure(path, error);
  }
}

/** `writev` until every byte is written (a write to a regular file may be short). */
async function writeFully(
  path: string,
  file: FileHandle,
  chunks: Uint8Array[],
  bytes: number,
  position: number,
): Promise<void> {
  try {
    await writeAll(file, chunks, bytes, position);
  } catch (error) {
    throw writeFailure(path, error);
  }
}

async function writeAll(
  file: FileHandle,
  chunks: Uint8Array[],
  bytes: number,
  position: number,
): Promise<void> {
  let written = 0;
  let remaining = chunks;
  while (written < bytes) {
    const { bytesWritten } = await file.writev(remaining, position + written);
    if (bytesWritten <= 0) throw new Error(`writev wrote ${bytesWritten} bytes`);
    written += bytesWritten;
    if (written >= bytes) return;
    // Drop what was written and continue with the rest of a partly written chunk.
    let skip = bytesWritten;
    const rest: Uint8Array[] = [];
    for (const chunk of remaining) {
      if (skip >= chunk.length) {
        skip -= chunk.length;
        continue;
      }
      rest.push(skip > 0 ? chunk.subarray(skip) : chunk);
      skip = 0;
    }
    remaining = rest;
  }
}
