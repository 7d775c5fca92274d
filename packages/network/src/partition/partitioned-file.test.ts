import { mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import {
  DataType,
  ErrorCodes,
  FreeingBufferRecycler,
  isSluiceError,
  MemorySegment,
  NetworkBuffer,
} from "@sluice/core";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BatchShuffleReadBufferPool } from "./batch-shuffle-read-buffer-pool.js";
import { DATA_FILE_SUFFIX, INDEX_FILE_SUFFIX, type PartitionedFile } from "./partitioned-file.js";
import { PartitionedFileReader } from "./partitioned-file-reader.js";
import { PartitionedFileWriter } from "./partitioned-file-writer.js";

const SEGMENT = 64;

function buffer(text: string, type = DataType.DATA_BUFFER, compressed = false): NetworkBuffer {
  const bytes = Buffer.from(text);
  return new NetworkBuffer(
    MemorySegment.wrap(bytes),
    FreeingBufferRecycler,
    type,
    bytes.length,
    compressed,
  );
}

/** Every buffer of `subpartition`, as "type:compressed:text". */
async function readAll(
  file: PartitionedFile,
  subpartition: number,
  pool: BatchShuffleReadBufferPool,
  batch = 3,
): Promise<string[]> {
  const reader = new PartitionedFileReader(file, subpartition);
  const seen: string[] = [];
  while (reader.hasRemaining()) {
    const segments = pool.requestBuffers(batch);
    let buffers: NetworkBuffer[];
    try {
      buffers = await reader.readBuffers(segments, pool);
    } finally {
      // Segments the reader did not use (all of them when it failed) stay in the array.
      for (const segment of segments) pool.recycle(segment);
    }
    for (const b of buffers) {
      seen.push(`${DataType[b.getDataType()]}:${b.isCompressed() ? 1 : 0}:${b.view().toString()}`);
      b.recycleBuffer();
    }
  }
  return seen;
}

describe("PartitionedFileWriter and PartitionedFileReader", () => {
  let dir: string;
  let pool: BatchShuffleReadBufferPool;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sluice-partitioned-file-"));
    pool = new BatchShuffleReadBufferPool(8 * SEGMENT, SEGMENT);
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Region 0: runs for 0 and 2 (1 is empty); region 1: broadcast; region 2: only 1. */
  async function writeThreeRegions(): Promise<PartitionedFile> {
    const writer = new PartitionedFileWriter(join(dir, "p"), 3, SEGMENT);
    await writer.open();
    writer.startRegion(false);
    writer.startRun(0);
    writer.appendBuffer(buffer("a0"));
    writer.appendBuffer(buffer("a1", DataType.DATA_BUFFER, true));
    writer.endRun();
    writer.startRun(2);
    for (let i = 0; i < 5; i++) writer.appendBuffer(buffer(`c${i}`));
    await writer.flush(); // payloads of a run may be flushed before its headers
    writer.appendBuffer(buffer("c5"));
    writer.endRun();
    await writer.endRegion();
    writer.startRegion(true);
    writer.startRun(0);
    writer.appendBuffer(buffer("all", DataType.EVENT_BUFFER));
    writer.endRun();
    await writer.endRegion();
    writer.startRegion(false);
    writer.startRun(1);
    writer.appendBuffer(buffer("b0"));
    writer.endRun();
    await writer.endRegion();
    return writer.finish();
  }

  it("reads back each subpartition's buffers region by region, broadcast regions for everyone", async () => {
    const file = await writeThreeRegions();
    expect(file.numberOfRegions).toBe(3);
    expect(await readAll(file, 0, pool)).toEqual([
      "DATA_BUFFER:0:a0",
      "DATA_BUFFER:1:a1",
      "EVENT_BUFFER:0:all",
    ]);
    expect(await readAll(file, 1, pool)).toEqual(["EVENT_BUFFER:0:all", "DATA_BUFFER:0:b0"]);
    expect(await readAll(file, 2, pool, 4)).toEqual([
      ...[0, 1, 2, 3, 4, 5].map((i) => `DATA_BUFFER:0:c${i}`),
      "EVENT_BUFFER:0:all",
    ]);
    expect(pool.getNumberOfAvailableBuffers()).toBe(pool.numberOfBuffers);
    await file.delete();
  });

  it("lays out runs as payloads, 12-byte headers with each payload's CRC32 and a count, and the index as offset/size pairs", async () => {
    const file = await writeThreeRegions();
    const data = readFileSync(file.dataFilePath);
    const index = readFileSync(file.indexFilePath);
    expect(index.length).toBe(3 * 3 * 16);
    const entry = (region: number, s: number) => {
      const at = (region * 3 + s) * 16;
      return [Number(index.readBigInt64BE(at)), Number(index.readBigInt64BE(at + 8))];
    };
    // Subpartition 0 of region 0: "a0" "a1", two headers, count.
    expect(entry(0, 0)).toEqual([0, 4 + 2 * 12 + 4]);
    expect(data.subarray(0, 4).toString()).toBe("a0a1");
    const header = (at: number) => [
      data.readInt16BE(at),
      data.readInt16BE(at + 2),
      data.readInt32BE(at + 4),
      data.readUInt32BE(at + 8),
    ];
    expect(header(4)).toEqual([DataType.DATA_BUFFER, 0, 2, crc32(Buffer.from("a0"))]);
    expect(header(16)).toEqual([DataType.DATA_BUFFER, 1, 2, crc32(Buffer.from("a1"))]);
    expect(data.readInt32BE(28)).toBe(2);
    expect(entry(0, 1)[1]).toBe(0);
    // The broadcast region's entries all point at the same run.
    expect(entry(1, 0)).toEqual(entry(1, 1));
    expect(entry(1, 0)).toEqual(entry(1, 2));
    expect(file.dataFileSize).toBe(data.length);
    await file.delete();
  });

  it("writes a region of 600 buffers with one writev, and its index entries when finished", async () => {
    // The FileHandle class is not exported: spy on the prototype of a real handle's writes.
    const probe = await open(join(dir, "probe"), "w");
    const writev = vi.spyOn(Object.getPrototypeOf(probe) as typeof probe, "writev");
    await probe.close();
    try {
      const writer = new PartitionedFileWriter(join(dir, "p"), 2, SEGMENT);
      await writer.open();
      writer.startRegion(false);
      for (const s of [0, 1]) {
        writer.startRun(s);
        for (let i = 0; i < 300; i++) writer.appendBuffer(buffer(`${s}-${i}`));
        writer.endRun();
      }
      await writer.endRegion();
      // 600 payloads and 2 runs' headers: before, 1,200 headers and counts beside them took two.
      expect(writev).toHaveBeenCalledTimes(1);
      expect(statSync(join(dir, `p${INDEX_FILE_SUFFIX}`)).size).toBe(0);
      const file = await writer.finish();
      expect(writev).toHaveBeenCalledTimes(2);
      expect(statSync(file.indexFilePath).size).toBe(2 * 16);
      const expected = Array.from({ length: 300 }, (_, i) => `DATA_BUFFER:0:1-${i}`);
      expect(await readAll(file, 1, pool, 8)).toEqual(expected);
      await file.delete();
    } finally {
      writev.mockRestore();
    }
  });

  it("appends waiting index entries to the index file once 1 MiB of them waits", async () => {
    const n = 1024; // 16 KiB of entries per region: 64 regions make 1 MiB
    const writer = new PartitionedFileWriter(join(dir, "p"), n, SEGMENT);
    await writer.open();
    const indexPath = join(dir, `p${INDEX_FILE_SUFFIX}`);
    for (let region = 0; region < 70; region++) {
      writer.startRegion(false);
      writer.startRun(region % n);
      writer.appendBuffer(buffer(`r${region}`));
      writer.endRun();
      await writer.endRegion();
      expect(statSync(indexPath).size).toBe(region < 63 ? 0 : 64 * n * 16);
    }
    const file = await writer.finish();
    expect(statSync(indexPath).size).toBe(70 * n * 16);
    expect(await readAll(file, 65, pool)).toEqual(["DATA_BUFFER:0:r65"]);
    await file.delete();
  });

  it("creates both files owner-only and refuses to write over an existing file", async () => {
    const file = await writeThreeRegions();
    for (const path of [file.dataFilePath, file.indexFilePath]) {
      expect(statSync(path).mode & 0o777).toBe(0o600);
    }
    const again = new PartitionedFileWriter(join(dir, "p"), 3, SEGMENT);
    await expect(again.open()).rejects.toThrow(/EEXIST/);
    await file.delete();
  });

  it("fails with SLUICE_ERR_PARTITION_FILE_WRITE naming the file when it cannot be created", async () => {
    rmSync(dir, { recursive: true });
    const writer = new PartitionedFileWriter(join(dir, "p"), 3, SEGMENT);
    const error = await writer.open().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isSluiceError(error, ErrorCodes.PARTITION_FILE_WRITE)).toBe(true);
    expect((error as Error).message).toContain(join(dir, `p${DATA_FILE_SUFFIX}`));
    expect((error as Error).message).toContain("io.tmp.dirs");
    expect((error as Error).message).toMatch(/ENOENT/);
  });

  it("deletes both files", async () => {
    const file = await writeThreeRegions();
    await readAll(file, 0, pool);
    await file.delete();
    expect(() => statSync(join(dir, `p${DATA_FILE_SUFFIX}`))).toThrow(/ENOENT/);
    expect(() => statSync(join(dir, `p${INDEX_FILE_SUFFIX}`))).toThrow(/ENOENT/);
  });

  it("fails a reader with SLUICE_ERR_PARTITION_FILE_CORRUPTED when the data file was truncated", async () => {
    const file = await writeThreeRegions();
    truncateSync(file.dataFilePath, 30);
    const error = await readAll(file, 2, pool).catch((e: unknown) => e);
    expect(isSluiceError(error, ErrorCodes.PARTITION_FILE_CORRUPTED)).toBe(true);
    expect((error as Error).message).toContain(file.dataFilePath);
    expect(pool.getNumberOfAvailableBuffers()).toBe(pool.numberOfBuffers);
    await file.delete();
  });

  it("fails a reader with SLUICE_ERR_PARTITION_FILE_CORRUPTED before it hands out a buffer whose payload byte changed (framing intact)", async () => {
    const file = await writeThreeRegions();
    const data = readFileSync(file.dataFilePath);
    const at = data.indexOf("c3");
    data[at + 1] = "9".charCodeAt(0); // c3 reads c9: every length and header still fits
    writeFileSync(file.dataFilePath, data);
    const reader = new PartitionedFileReader(file, 2);
    const delivered: string[] = [];
    let error: unknown;
    while (reader.hasRemaining() && error === undefined) {
      const segments = pool.requestBuffers(8);
      try {
        for (const b of await reader.readBuffers(segments, pool)) {
          delivered.push(b.view().toString());
          b.recycleBuffer();
        }
      } catch (e) {
        error = e;
      } finally {
        for (const segment of segments) pool.recycle(segment);
      }
    }
    expect(isSluiceError(error, ErrorCodes.PARTITION_FILE_CORRUPTED)).toBe(true);
    expect((error as Error).message).toMatch(/buffer 3 of region 0, subpartition 2 .*CRC32/);
    expect(delivered).not.toContain("c9");
    expect(pool.getNumberOfAvailableBuffers()).toBe(pool.numberOfBuffers);
    await file.delete();
  });

  it("fails a reader with SLUICE_ERR_PARTITION_FILE_CORRUPTED naming the file when the data file was deleted", async () => {
    const file = await writeThreeRegions();
    rmSync(file.dataFilePath);
    const error = await readAll(file, 0, pool).catch((e: unknown) => e);
    expect(isSluiceError(error, ErrorCodes.PARTITION_FILE_CORRUPTED)).toBe(true);
    expect((error as Error).message).toContain(file.dataFilePath);
    expect((error as Error).message).toMatch(/ENOENT/);
    expect(pool.getNumberOfAvailableBuffers()).toBe(pool.numberOfBuffers);
    await file.delete();
  });

  it("fails a reader with SLUICE_ERR_PARTITION_FILE_CORRUPTED when a run's headers are damaged", async () => {
    const file = await writeThreeRegions();
    const data = readFileSync(file.dataFilePath);
    data.writeInt32BE(1_000_000, 8); // buffer a0 claims a megabyte
    writeFileSync(file.dataFilePath, data);
    const error = await readAll(file, 0, pool).catch((e: unknown) => e);
    expect(isSluiceError(error, ErrorCodes.PARTITION_FILE_CORRUPTED)).toBe(true);
    expect((error as Error).message).toMatch(/region 0, subpartition 0.*length 1000000/);
    await file.delete();
  });
});
