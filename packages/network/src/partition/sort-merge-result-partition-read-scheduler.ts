import {
  type BufferRecycler,
  CancelledError,
  IllegalStateError,
  type MemorySegment,
  TimeoutError,
} from "@sluice/core";
import type { BatchShuffleReadBufferPool } from "./batch-shuffle-read-buffer-pool.js";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { PartitionedFile } from "./partitioned-file.js";
import { PartitionedFileReader } from "./partitioned-file-reader.js";
import {
  type ReadRequester,
  SortMergeSubpartitionReader,
} from "./sort-merge-subpartition-reader.js";

/**
 * Schedules the disk reads of every reader of one sort-merge partition (Flink's
 * SortMergeResultPartitionReadScheduler). One asynchronous loop per partition: it takes buffers
 * from the worker's batch-shuffle read pool, orders the readers that have room by the file offset
 * they read next, and reads for them one after another in that order, so that many consumers of
 * one file make the disk read forward instead of seeking back and forth. It waits (without
 * blocking) when the read pool is empty, and stops when no reader needs data.
 *
 * Its readers hold at most the pool's per-partition share of read buffers (the scheduler is
 * their recycler, so it counts them back), which leaves buffers for the other partitions read at
 * once. When the pool stays empty for its request timeout, every reader fails with a
 * `SLUICE_ERR_TIMEOUT` that names the read memory to raise: contention ends in an error, not in a
 * job that hangs.
 */
export class SortMergeResultPartitionReadScheduler implements ReadRequester, BufferRecycler {
  private readonly readPool: BatchShuffleReadBufferPool;
  private readonly file: PartitionedFile;
  private readonly readers = new Set<SortMergeSubpartitionReader>();
  private running: Promise<void> | undefined;
  private rerun = false;
  private released = false;
  private readonly initialSequenceNumber: number;
  /** Read buffers taken from the pool for this partition and not recycled yet. */
  private numberOfRequestedBuffers = 0;
  /** True while readers wait because this partition holds its whole share. */
  private waitingForShare = false;
  /** Ends the current wait for a free read buffer (on release). */
  private endWait: (() => void) | undefined;

  /** @param initialSequenceNumber the first sequence number of every reader (Flink: 0) */
  constructor(
    readPool: BatchShuffleReadBufferPool,
    file: PartitionedFile,
    initialSequenceNumber = 0,
  ) {
    this.readPool = readPool;
    this.file = file;
    this.initialSequenceNumber = initialSequenceNumber;
  }

  /** A new reader of `subpartition`, reading from the start of the file. */
  createSubpartitionReader(
    listener: BufferAvailabilityListener,
    subpartition: number,
  ): SortMergeSubpartitionReader {
    if (this.released) throw new IllegalStateError(`${this.file} was released`);
    const reader = new SortMergeSubpartitionReader(
      new PartitionedFileReader(this.file, subpartition),
      listener,
      this,
      this.initialSequenceNumber,
    );
    this.readers.add(reader);
    this.requestRead();
    return reader;
  }

  requestRead(): void {
    if (this.released) return;
    if (this.running !== undefined) {
      this.rerun = true; // the loop looks again before it stops
      return;
    }
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.rerun && !this.released) this.requestRead();
    });
  }

  removeReader(reader: SortMergeSubpartitionReader): void {
    this.readers.delete(reader);
  }

  /** Takes back a read buffer of this partition's readers, for the pool. */
  recycle(segment: MemorySegment): void {
    this.numberOfRequestedBuffers--;
    this.readPool.recycle(segment);
    if (this.waitingForShare) {
      this.waitingForShare = false;
      this.requestRead();
    }
  }

  /** Readers currently registered (for tests and metrics). */
  getNumberOfReaders(): number {
    return this.readers.size;
  }

  /**
   * Fails every reader with `cause` and resolves once no read is in flight any more, so the
   * caller may close and delete the file.
   */
  async release(cause: Error): Promise<void> {
    this.released = true;
    for (const reader of [...this.readers]) reader.fail(cause);
    this.readers.clear();
    this.endWait?.();
    await this.running;
  }

  private async run(): Promise<void> {
    do {
      this.rerun = false;
      await this.readRound();
    } while (this.rerun && !this.released);
  }

  /** Reads for every reader that has room, in file-offset order, until none has. */
  private async readRound(): Promise<void> {
    let waitingSince: number | undefined;
    for (;;) {
      if (this.released) return;
      const wanting = [...this.readers].filter((reader) => reader.getBufferDemand() > 0);
      if (wanting.length === 0) return;
      wanting.sort((a, b) => a.getNextReadOffset() - b.getNextReadOffset());
      let demand = 0;
      for (const reader of wanting) demand += reader.getBufferDemand();
      const share = this.readPool.maxBuffersPerPartition - this.numberOfRequestedBuffers;
      if (share <= 0) {
        // The readers hold the whole share: a buffer they recycle starts the next round.
        this.waitingForShare = true;
        return;
      }
      let segments: MemorySegment[];
      try {
        segments = this.readPool.requestBuffers(Math.min(demand, share));
      } catch (error) {
        this.failAll(error as Error);
        return;
      }
      if (segments.length === 0) {
        waitingSince ??= performance.now();
        const waited = performance.now() - waitingSince;
        if (waited >= this.readPool.requestTimeoutMs) {
          this.failAll(this.requestTimedOut(waited));
          return;
        }
        await this.availableOrTimeout(this.readPool.requestTimeoutMs - waited);
        if (this.readPool.isDestroyed()) {
          this.failAll(new CancelledError(`the read buffer pool of ${this.file} was destroyed`));
          return;
        }
        continue;
      }
      waitingSince = undefined;
      this.numberOfRequestedBuffers += segments.length;
      try {
        for (const reader of wanting) {
          if (segments.length === 0 || this.released) break;
          const mine = segments.splice(0, reader.getBufferDemand());
          try {
            await reader.readBuffers(mine, this);
          } catch (error) {
            reader.fail(error as Error);
          } finally {
            segments.push(...mine);
          }
        }
      } finally {
        for (const segment of segments) this.recycle(segment);
      }
    }
  }

  /** Resolves when the pool has a buffer again, after `ms`, or on release, whichever is first. */
  private async availableOrTimeout(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.readPool.getAvailableFuture(),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, ms);
          this.endWait = resolve;
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.endWait = undefined;
    }
  }

  private requestTimedOut(waitedMs: number): TimeoutError {
    const pool = this.readPool;
    return new TimeoutError(
      `no batch-shuffle read buffer became free for ${this.file} within ${Math.round(waitedMs)} ms ` +
        `('taskmanager.network.batch-shuffle.read-buffer-request-timeout'): the read memory is ` +
        `contended by the partitions read at once; increase ` +
        `'taskmanager.memory.framework.off-heap.batch-shuffle.size' (now ${pool.totalBytes} bytes, ` +
        `${pool.numberOfBuffers} buffers)`,
    );
  }

  private failAll(cause: Error): void {
    for (const reader of [...this.readers]) reader.fail(cause);
  }
}
