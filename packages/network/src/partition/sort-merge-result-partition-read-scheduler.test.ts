import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DataType,
  ErrorCodes,
  FreeingBufferRecycler,
  isSluiceError,
  MemorySegment,
  NetworkBuffer,
} from "@sluice/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BatchShuffleReadBufferPool } from "./batch-shuffle-read-buffer-pool.js";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { PartitionedFile } from "./partitioned-file.js";
import { PartitionedFileWriter } from "./partitioned-file-writer.js";
import { SortMergeResultPartitionReadScheduler } from "./sort-merge-result-partition-read-scheduler.js";
import type { SortMergeSubpartitionReader } from "./sort-merge-subpartition-reader.js";

const MiB = 1024 * 1024;
/** Read buffers of 1 MiB: a request unit (4 MiB) is 4 buffers, a partition's share 8. */
const READ_BUFFER = MiB;
const BUFFERS_PER_SUBPARTITION = 40;

/** A consumer that never reads: its reader fills its read-ahead and keeps it. */
const IDLE: BufferAvailabilityListener = { notifyDataAvailable: () => {} };

/** Polls `condition` every 5 ms until it holds, failing after 5 s. */
async function until(what: string, condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("SortMergeResultPartitionReadScheduler and the batch-shuffle read memory", () => {
  let dir: string;
  let file: PartitionedFile;
  const schedulers: SortMergeResultPartitionReadScheduler[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sluice-read-scheduler-"));
    // Two subpartitions of 40 small buffers each: every reader wants its full read-ahead (32).
    const writer = new PartitionedFileWriter(join(dir, "p"), 2, READ_BUFFER);
    await writer.open();
    writer.startRegion(false);
    for (let s = 0; s < 2; s++) {
      writer.startRun(s);
      for (let i = 0; i < BUFFERS_PER_SUBPARTITION; i++) {
        const bytes = Buffer.from(`${s}:${i}`);
        writer.appendBuffer(
          new NetworkBuffer(
            MemorySegment.wrap(bytes),
            FreeingBufferRecycler,
            DataType.DATA_BUFFER,
            bytes.length,
          ),
        );
      }
      writer.endRun();
    }
    await writer.endRegion();
    file = await writer.finish();
  });

  afterEach(async () => {
    for (const scheduler of schedulers.splice(0)) {
      await scheduler.release(new Error("the test ended"));
    }
    await file.delete();
    rmSync(dir, { recursive: true, force: true });
  });

  function schedulerOver(pool: BatchShuffleReadBufferPool): SortMergeResultPartitionReadScheduler {
    const scheduler = new SortMergeResultPartitionReadScheduler(pool, file);
    schedulers.push(scheduler);
    return scheduler;
  }

  it("lets one partition's readers hold at most two request units, leaving the rest to the partitions read beside it", async () => {
    const pool = new BatchShuffleReadBufferPool(12 * READ_BUFFER, READ_BUFFER);
    expect(pool.numberOfBuffersPerRequest).toBe(4);
    expect(pool.maxBuffersPerPartition).toBe(8);
    const greedy = schedulerOver(pool);
    const readers = [0, 1].map((s) => greedy.createSubpartitionReader(IDLE, s));
    // Both readers want 32 buffers; together they get their partition's share, no more.
    await until("the first partition holds its share", () => queued(readers) === 8);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(queued(readers)).toBe(8);
    expect(pool.getNumberOfAvailableBuffers()).toBe(4);
    // Another partition read at the same time gets the buffers left.
    const beside = schedulerOver(pool).createSubpartitionReader(IDLE, 0);
    await until("the other partition reads", () => beside.getNumberOfQueuedBuffers() === 4);
    // A buffer the first partition's consumer takes and recycles goes to a reader again.
    const taken = readers[0]?.getNextBuffer();
    expect(taken).toBeDefined();
    taken?.buffer.recycleBuffer();
    await until("the share is refilled", () => queued(readers) === 8);
    for (const reader of [...readers, beside]) reader.releaseAllResources();
    await until("every read buffer is back", () => pool.getNumberOfAvailableBuffers() === 12);
  });

  it("fails its readers with SLUICE_ERR_TIMEOUT naming the read memory when no read buffer frees within the request timeout", async () => {
    // 8 buffers: one partition's share is the whole pool, and its consumer never reads.
    const pool = new BatchShuffleReadBufferPool(8 * READ_BUFFER, READ_BUFFER, 200);
    const holder = schedulerOver(pool).createSubpartitionReader(IDLE, 0);
    await until("the first partition holds the whole pool", () => {
      return holder.getNumberOfQueuedBuffers() === 8;
    });
    let notified = 0;
    const starved: SortMergeSubpartitionReader = schedulerOver(pool).createSubpartitionReader(
      { notifyDataAvailable: () => notified++ },
      1,
    );
    const waitingSince = performance.now();
    await until("the starved reader fails", () => starved.getFailureCause() !== undefined);
    expect(performance.now() - waitingSince).toBeGreaterThanOrEqual(190);
    const failure = starved.getFailureCause();
    expect(isSluiceError(failure, ErrorCodes.TIMEOUT)).toBe(true);
    expect(failure?.message).toContain(
      "'taskmanager.memory.framework.off-heap.batch-shuffle.size'",
    );
    expect(failure?.message).toContain(
      "'taskmanager.network.batch-shuffle.read-buffer-request-timeout'",
    );
    // Its consumer hears of the failure; the other partition's reader is untouched.
    expect(notified).toBe(1);
    expect(holder.getFailureCause()).toBeUndefined();
    holder.releaseAllResources();
    await until("every read buffer is back", () => pool.getNumberOfAvailableBuffers() === 8);
  });
});

function queued(readers: readonly SortMergeSubpartitionReader[]): number {
  return readers.reduce((sum, reader) => sum + reader.getNumberOfQueuedBuffers(), 0);
}
