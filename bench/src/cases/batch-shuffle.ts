/**
 * The parent's side of the batch-shuffle case: a writer and a reader process per system, kept
 * alive between runs so that the runs of all systems interleave (as ThroughputSession does). A run
 * writes a fixed number of records (a BLOCKING partition, or the baseline's file), waits until
 * they are on disk, then reads them all in the other process; write+read throughput is the
 * payload bytes over the two times added up. The writer's RSS is sampled from before its first
 * write to after its last run.
 */

import type { BatchParams, BatchReadResult, BatchWriteResult } from "../batch-roles.js";
import { type BenchOptions, Child, profileArgs } from "../harness.js";
import type { Impl } from "../worker.js";
import type { Lz4Args, Lz4Result } from "./lz4-bench.js";

/** One measured run. */
export interface BatchRun {
  /** Payload bytes ÷ (write ms + read ms). */
  readonly bytesPerSecond: number;
  readonly writeMs: number;
  readonly readMs: number;
  readonly valid: boolean;
  readonly write: BatchWriteResult;
  readonly read: BatchReadResult;
}

function call<T>(child: Child, method: string, args: unknown, timeoutMs: number): Promise<T> {
  return child.request<T>("call", { method, args }, timeoutMs);
}

const RUN_TIMEOUT_MS = 300_000;

export class BatchSession {
  readonly problems: string[] = [];
  readonly runs: BatchRun[] = [];
  private closed = false;

  private constructor(
    readonly system: string,
    private readonly params: BatchParams,
    private readonly writer: Child,
    private readonly reader: Child,
  ) {}

  /** Starts both processes and the writer's shared state, then starts sampling its RSS. */
  static async open(
    options: BenchOptions,
    system: string,
    impl: Impl,
    params: BatchParams,
  ): Promise<BatchSession> {
    const args = (role: string) => ["--expose-gc", ...profileArgs(options, system, role)];
    const writer = new Child(`${system}:producer`, args("producer"), 0);
    const reader = new Child(`${system}:consumer`, args("consumer"), 1);
    const session = new BatchSession(system, params, writer, reader);
    try {
      await Promise.all([
        writer.request("init", { impl, role: "producer", params }, 30_000),
        reader.request("init", { impl, role: "consumer", params }, 30_000),
      ]);
      await call(writer, "prepare", null, 30_000);
      await writer.request("memStart", null, 10_000);
    } catch (error) {
      await session.close();
      throw error;
    }
    return session;
  }

  async run(measured: boolean): Promise<BatchRun> {
    const write = await call<BatchWriteResult>(this.writer, "write", null, RUN_TIMEOUT_MS);
    const read = await call<BatchReadResult>(this.reader, "read", write.endpoint, RUN_TIMEOUT_MS);
    await call(this.reader, "cleanup", null, 30_000);
    await call(this.writer, "cleanup", null, 30_000);
    const bytes = write.sent * this.params.recordSize;
    const result: BatchRun = {
      bytesPerSecond: (bytes * 1000) / (write.writeMs + read.readMs),
      writeMs: write.writeMs,
      readMs: read.readMs,
      valid: write.sent === read.received && write.keySum === read.keySum,
      write,
      read,
    };
    if (!result.valid) {
      this.problems.push(
        `${measured ? "a measured" : "the warm-up"} run wrote ${write.sent} records but ${read.received} were read (or key sums differ)`,
      );
    }
    if (measured) this.runs.push(result);
    return result;
  }

  /** The writer's RSS since `open` (baseline, peak, growth in MiB). */
  writerMemory(): Promise<Record<string, number>> {
    return this.writer.request<Record<string, number>>("memStop", null, 10_000);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.writer.close(), this.reader.close()]);
  }
}

/** LZ4 on the demo's words, in one child (see lz4-bench.ts). */
export async function runLz4(options: BenchOptions, args: Lz4Args): Promise<Lz4Result> {
  const child = new Child("lz4", profileArgs(options, "lz4", "lz4"), 0);
  try {
    return await child.request<Lz4Result>(
      "lz4",
      args,
      (args.durationMs * 2 + args.warmupMs * 2) * (args.runs + 1) + 60_000,
    );
  } finally {
    await child.close();
  }
}
