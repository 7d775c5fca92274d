import {
  AvailabilityHelper,
  type AvailabilityProvider,
  type BufferRecycler,
  ConfigurationError,
  IllegalStateError,
  MemorySegment,
} from "@sluice/core";

/** The bytes of read memory one request takes at most (Flink's request unit of 4 MiB). */
const BYTES_PER_REQUEST = 4 * 1024 * 1024;

/** The default of `taskmanager.network.batch-shuffle.read-buffer-request-timeout`: 5 minutes. */
const DEFAULT_REQUEST_TIMEOUT_MS = 5 * 60 * 1000;

/**
 * The worker's memory for reading blocking partitions back from disk (Flink's
 * BatchShuffleReadBufferPool): `taskmanager.memory.framework.off-heap.batch-shuffle.size` cut into
 * buffers of the network segment size, separate from the NetworkBufferPool so that reading
 * finished partitions never competes with running pipelines. Allocated at the first request.
 * Requests never block: they return what is free now, and `getAvailableFuture()` resolves when a
 * buffer comes back.
 *
 * The pool is shared fairly: one partition's readers hold at most `maxBuffersPerPartition`
 * (two request units), so the partitions read at once each get a share, and a reader that finds
 * no buffer free for `requestTimeoutMs` fails instead of waiting without end.
 */
export class BatchShuffleReadBufferPool implements BufferRecycler, AvailabilityProvider {
  readonly totalBytes: number;
  readonly bufferSize: number;
  readonly numberOfBuffers: number;
  /** Buffers in one request unit (4 MiB, or the whole pool when smaller). */
  readonly numberOfBuffersPerRequest: number;
  /** The most buffers the readers of one partition hold at once: two request units. */
  readonly maxBuffersPerPartition: number;
  /** `taskmanager.network.batch-shuffle.read-buffer-request-timeout` in ms. */
  readonly requestTimeoutMs: number;
  private readonly free: MemorySegment[] = [];
  private readonly availability = new AvailabilityHelper();
  private initialized = false;
  private destroyed = false;

  constructor(
    totalBytes: number,
    bufferSize: number,
    requestTimeoutMs: number = DEFAULT_REQUEST_TIMEOUT_MS,
  ) {
    this.totalBytes = totalBytes;
    this.bufferSize = bufferSize;
    this.requestTimeoutMs = requestTimeoutMs;
    this.numberOfBuffers = Math.floor(totalBytes / bufferSize);
    if (this.numberOfBuffers < 1) {
      throw new ConfigurationError(
        `'taskmanager.memory.framework.off-heap.batch-shuffle.size' (${totalBytes} bytes) must ` +
          `hold at least one buffer of ${bufferSize} bytes ('taskmanager.memory.segment-size')`,
      );
    }
    this.numberOfBuffersPerRequest = Math.max(
      1,
      Math.min(this.numberOfBuffers, Math.floor(BYTES_PER_REQUEST / bufferSize)),
    );
    this.maxBuffersPerPartition = Math.min(
      this.numberOfBuffers,
      2 * this.numberOfBuffersPerRequest,
    );
  }

  /** Allocates the memory (one block) if not done yet. */
  initialize(): void {
    if (this.initialized || this.destroyed) return;
    this.initialized = true;
    const memory = Buffer.allocUnsafeSlow(this.numberOfBuffers * this.bufferSize);
    for (let i = this.numberOfBuffers - 1; i >= 0; i--) {
      const view = memory.subarray(i * this.bufferSize, (i + 1) * this.bufferSize);
      this.free.push(MemorySegment.wrap(view, this));
    }
  }

  /** Up to `max` free buffers, possibly none. */
  requestBuffers(max: number): MemorySegment[] {
    if (this.destroyed) throw new IllegalStateError("batch-shuffle read buffer pool is destroyed");
    this.initialize();
    const taken = this.free.splice(Math.max(0, this.free.length - max));
    if (this.free.length === 0) this.availability.resetUnavailable();
    return taken;
  }

  /** Takes a buffer back (BufferRecycler of the read buffers). */
  recycle(segment: MemorySegment): void {
    if (segment.owner !== this) {
      throw new IllegalStateError("segment returned to a read buffer pool that does not own it");
    }
    this.free.push(segment);
    if (this.free.length === 1) this.availability.resetAvailable();
  }

  /** Buffers free right now. */
  getNumberOfAvailableBuffers(): number {
    return this.initialized ? this.free.length : this.numberOfBuffers;
  }

  isAvailable(): boolean {
    return this.availability.isAvailable();
  }

  /** Resolves when a buffer is free again (or the pool is destroyed). */
  getAvailableFuture(): Promise<void> {
    return this.availability.getAvailableFuture();
  }

  /** Drops the free memory; buffers still out are dropped when they come back. Idempotent. */
  destroy(): void {
    this.destroyed = true;
    this.availability.resetAvailable();
  }

  isDestroyed(): boolean {
    return this.destroyed;
  }
}
