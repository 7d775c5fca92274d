/**
 * The compression part of the batch-shuffle case, run in one child: LZ4 over the demo's word data
 * laid out as a blocking partition's buffers hold it (each word a record: its 4-byte length, then
 * the string serializer's int32 byte count and UTF-8, records spanning 32 KiB buffers), through
 * Sluice's `BufferCompressor` and through `lz4-napi`'s `compressSync` called directly.
 */
import { createRequire } from "node:module";
import { DataType, FreeingBufferRecycler, MemorySegment, NetworkBuffer } from "@sluice/core";
import { Corpus, tokenize } from "@sluice/corpus";
import {
  type BlockCompressionFactory,
  BufferCompressor,
  createBlockCompressionFactory,
} from "@sluice/network/plugin";

/** What the parent asks for. */
export interface Lz4Args {
  /** Words of the demo's corpus (seed 42, one source's share). */
  readonly words: number;
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly runs: number;
}

/** Per system: the ratio (bytes in ÷ bytes out) and the compression rate of each run (bytes in/s). */
export interface Lz4Result {
  readonly inputBytes: number;
  readonly buffers: number;
  readonly sluice: { readonly ratio: number; readonly bytesPerSecond: number[] };
  readonly direct: { readonly ratio: number; readonly bytesPerSecond: number[] };
}

const BUFFER_BYTES = 32 * 1024;

interface Lz4Napi {
  compressSync(data: Buffer): Buffer;
}

/** The demo's words as a partition's full buffers. */
function wordBuffers(words: number): Buffer[] {
  const corpus = new Corpus(42);
  const partition = corpus.partition({ seed: 42, records: words, parallelism: 1 }, 0);
  const buffers: Buffer[] = [];
  let current = Buffer.allocUnsafe(BUFFER_BYTES);
  let position = 0;
  const append = (bytes: Buffer) => {
    for (let offset = 0; offset < bytes.length; ) {
      const n = Math.min(bytes.length - offset, BUFFER_BYTES - position);
      bytes.copy(current, position, offset, offset + n);
      position += n;
      offset += n;
      if (position === BUFFER_BYTES) {
        buffers.push(current);
        current = Buffer.allocUnsafe(BUFFER_BYTES);
        position = 0;
      }
    }
  };
  const record = Buffer.allocUnsafe(8 + 256);
  const lineWords: string[] = [];
  for (let line = partition.nextLine(); line !== undefined; line = partition.nextLine()) {
    lineWords.length = 0;
    tokenize(line, lineWords);
    for (const word of lineWords) {
      const length = record.write(word, 8, "utf8");
      record.writeInt32BE(4 + length, 0);
      record.writeInt32BE(length, 4);
      append(record.subarray(0, 8 + length));
    }
  }
  if (position > 0) buffers.push(current.subarray(0, position));
  return buffers;
}

/** One pass of `compress` over every buffer; its duration in ms. */
function timedPass(buffers: readonly Buffer[], compress: (b: Buffer, i: number) => number): number {
  const start = performance.now();
  for (let i = 0; i < buffers.length; i++) compress(buffers[i] as Buffer, i);
  return performance.now() - start;
}

/**
 * Alternates one pass of each system until `ms` passed, so that a noisy phase of a shared machine
 * hits both alike; returns each system's bytes in per second over its own passes.
 */
function rates(
  buffers: readonly Buffer[],
  systems: readonly ((b: Buffer, i: number) => number)[],
  ms: number,
): number[] {
  const bytes = buffers.reduce((sum, b) => sum + b.length, 0);
  const spent = systems.map(() => 0);
  let passes = 0;
  const start = performance.now();
  do {
    systems.forEach((compress, s) => {
      spent[s] = (spent[s] as number) + timedPass(buffers, compress);
    });
    passes++;
  } while (performance.now() - start < ms);
  return spent.map((total) => (bytes * passes * 1000) / total);
}

/** One pass: bytes in ÷ bytes out. */
function ratio(buffers: readonly Buffer[], compress: (b: Buffer, i: number) => number): number {
  let input = 0;
  let output = 0;
  buffers.forEach((buffer, i) => {
    input += buffer.length;
    output += compress(buffer, i);
  });
  return input / output;
}

export function runLz4Benchmark(args: Lz4Args): Lz4Result {
  const buffers = wordBuffers(args.words);
  const compressor = new BufferCompressor(
    createBlockCompressionFactory("LZ4") as BlockCompressionFactory,
  );
  const segments = buffers.map((b) => MemorySegment.wrap(b));
  // Sluice's path: a network buffer over the segment, kept uncompressed when LZ4 would not shrink it.
  const sluice = (_b: Buffer, i: number) => {
    const buffer = new NetworkBuffer(
      segments[i] as MemorySegment,
      FreeingBufferRecycler,
      DataType.DATA_BUFFER,
      (buffers[i] as Buffer).length,
    );
    return compressor.compressToIntermediateBuffer(buffer).readableBytes();
  };
  const lz4 = createRequire(import.meta.url)("lz4-napi") as Lz4Napi;
  const direct = (b: Buffer) => lz4.compressSync(b).length;
  const result = {
    inputBytes: buffers.reduce((sum, b) => sum + b.length, 0),
    buffers: buffers.length,
    sluice: { ratio: ratio(buffers, sluice), bytesPerSecond: [] as number[] },
    direct: { ratio: ratio(buffers, direct), bytesPerSecond: [] as number[] },
  };
  rates(buffers, [sluice, direct], args.warmupMs);
  for (let run = 0; run < args.runs; run++) {
    const [viaSluice, viaDirect] = rates(buffers, [sluice, direct], args.durationMs);
    result.sluice.bytesPerSecond.push(viaSluice as number);
    result.direct.bytesPerSecond.push(viaDirect as number);
  }
  return result;
}
