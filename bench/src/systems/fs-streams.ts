/**
 * The batch-shuffle case's baseline: the same framed records written to a file with a plain
 * `fs.createWriteStream` (32 KiB chunks, as Sluice's buffers, honouring `drain`) and read back in
 * the reader's process with `fs.createReadStream`, parsing each record's key. No sorting, no
 * index, no compression, no network hop: the cost of moving the bytes through the disk cache.
 */
import { once } from "node:events";
import { createReadStream, createWriteStream, mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Writable } from "node:stream";
import { finished } from "node:stream/promises";
import type {
  BatchParams,
  BatchReader,
  BatchReadResult,
  BatchWriteResult,
  BatchWriter,
} from "../batch-roles.js";
import { makeFramedRecords } from "../records.js";

const CHUNK_BYTES = 32 * 1024;

/**
 * Writes the run's framed records to `stream` in 32 KiB chunks, honouring `drain`, and ends it.
 * Returns the sum of the keys written, which the reader's sum must equal.
 */
export async function writeFramedRecords(stream: Writable, p: BatchParams): Promise<number> {
  const framed = makeFramedRecords(p.recordSize);
  const mask = framed.length - 1;
  // Each chunk is handed to the stream, which keeps it until written: a new one per chunk.
  let chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let position = 0;
  let keySum = 0;
  for (let i = 0; i < p.records; i++) {
    const record = framed[i & mask] as Buffer;
    if (position + record.length > CHUNK_BYTES) {
      if (!stream.write(chunk.subarray(0, position))) await once(stream, "drain");
      chunk = Buffer.allocUnsafe(CHUNK_BYTES);
      position = 0;
    }
    record.copy(chunk, position);
    position += record.length;
    keySum = (keySum + (i & mask)) | 0;
  }
  stream.end(chunk.subarray(0, position));
  return keySum;
}

/**
 * Counts the framed records of `chunks` (a file's or a socket's bytes, cut anywhere) and sums
 * their keys, as a consumer reads them.
 */
export async function readFramedRecords(
  chunks: AsyncIterable<Buffer>,
  recordSize: number,
): Promise<{ received: number; keySum: number }> {
  const framedLength = 4 + recordSize;
  let received = 0;
  let keySum = 0;
  // A record split over two chunks: its first part, copied.
  const carry = Buffer.allocUnsafe(framedLength);
  let carried = 0;
  for await (const bytes of chunks) {
    let offset = 0;
    if (carried > 0) {
      offset = bytes.copy(carry, carried, 0, framedLength - carried);
      carried += offset;
      if (carried < framedLength) continue;
      keySum = (keySum + carry.readInt32BE(4)) | 0;
      received++;
      carried = 0;
    }
    for (; offset + framedLength <= bytes.length; offset += framedLength) {
      keySum = (keySum + bytes.readInt32BE(offset + 4)) | 0;
      received++;
    }
    carried = bytes.copy(carry, 0, offset);
  }
  if (carried > 0) throw new Error(`the data ends inside a record (${carried} bytes left)`);
  return { received, keySum };
}

export class FsBatchWriter implements BatchWriter {
  private folder: string | undefined;
  private file: string | undefined;
  private runs = 0;

  constructor(protected readonly params: BatchParams) {}

  async prepare(): Promise<void> {
    this.folder ??= mkdtempSync(join(tmpdir(), "sluice-bench-fs-"));
  }

  /** The file of the next run, deleted by `cleanup`. */
  protected async nextFile(): Promise<string> {
    await this.prepare();
    const file = join(this.folder as string, `run-${this.runs++}.data`);
    this.file = file;
    return file;
  }

  async write(): Promise<BatchWriteResult> {
    const file = await this.nextFile();
    const start = performance.now();
    const stream = createWriteStream(file, { flags: "wx", mode: 0o600 });
    const keySum = await writeFramedRecords(stream, this.params);
    await finished(stream);
    return {
      sent: this.params.records,
      keySum,
      writeMs: performance.now() - start,
      endpoint: file,
    };
  }

  async cleanup(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    if (file !== undefined) await rm(file, { force: true });
  }

  async close(): Promise<void> {
    await this.cleanup();
    if (this.folder !== undefined) await rm(this.folder, { recursive: true, force: true });
    this.folder = undefined;
  }
}

export class FsBatchReader implements BatchReader {
  constructor(private readonly params: BatchParams) {}

  async read(endpoint: unknown): Promise<BatchReadResult> {
    const start = performance.now();
    const { received, keySum } = await readFramedRecords(
      createReadStream(endpoint as string),
      this.params.recordSize,
    );
    return { received, keySum, readMs: performance.now() - start };
  }

  async cleanup(): Promise<void> {}

  async close(): Promise<void> {}
}
