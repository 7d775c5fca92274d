import {
  BufferPoolDestroyedError,
  IllegalArgumentError,
  IllegalStateError,
  InsufficientBuffersError,
  TimeoutError,
} from "../errors.js";
import { AvailabilityHelper, type AvailabilityProvider } from "./availability.js";
import { LocalBufferPool, type LocalBufferPoolOptions } from "./local-buffer-pool.js";
import { MemorySegment } from "./memory-segment.js";
import type { SharedNetworkMemory } from "./shared-network-memory.js";

/** The key of the time an exclusive-buffer request may wait; named in error messages. */
const BUFFERS_REQUEST_TIMEOUT_KEY = "taskmanager.network.memory.buffers-request-timeout";

/** A request for unpooled segments that waits for other pools to return their excess. */
interface SegmentWaiter {
  readonly count: number;
  readonly segments: MemorySegment[];
  readonly resolve: (segments: MemorySegment[]) => void;
  readonly reject: (error: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * What helps when buffers run out, named in every such error. The pool's size is fixed at
 * network memory ÷ segment size, so the levers are: more memory, fewer buffers needed per channel,
 * gate and blocking partition, fewer channels (parallelism), or smaller segments, which cut the
 * same memory into more buffers. A larger segment size makes fewer buffers and never helps.
 */
const INSUFFICIENT_BUFFERS_HINT =
  "To fix it: give the worker more network memory ('taskmanager.memory.network.min', " +
  "'taskmanager.memory.network.max', 'taskmanager.memory.network.fraction'); or need fewer " +
  "buffers per channel, gate and blocking partition " +
  "('taskmanager.network.memory.buffers-per-channel', " +
  "'taskmanager.network.memory.floating-buffers-per-gate', " +
  "'taskmanager.network.memory.read-buffer.required-per-gate.max', " +
  "'taskmanager.network.sort-shuffle.min-buffers'); or use a smaller " +
  "'taskmanager.memory.segment-size', which makes more buffers of the same memory; or lower the " +
  "parallelism, which means fewer channels and subpartitions.";

/**
 * The process-wide pool of network memory (Flink's NetworkBufferPool): a fixed number of
 * equal-size segments allocated once, up front, so the memory a worker uses for shuffling is
 * bounded and known.
 *
 * A task manager whose slots run on worker threads has one {@link SharedNetworkMemory}, and each
 * thread a NetworkBufferPool over it (`new NetworkBufferPool(sharedMemory)`): the segments, the
 * free list and the guarantees are the task manager's, so every thread's pools draw from all of
 * its network memory, as the slots of a Flink TaskManager do. The excess is spread over the
 * threads in proportion to what their pools could use; a thread re-spreads its share when
 * another thread's guarantees or needs change, and learns of segments freed on another thread
 * from the shared free count.
 *
 * It hands segments to LocalBufferPools (one per result partition and per input gate) and
 * directly to input channels as exclusive buffers. Every pool gets its required segments
 * guaranteed; the segments nobody requires are spread over the pools that could use more, in
 * proportion to how many more each could use, and re-spread whenever a pool is created or
 * destroyed — idle memory absorbs bursts instead of sitting unused.
 */
export class NetworkBufferPool implements AvailabilityProvider {
  readonly segmentSize: number;
  readonly totalNumberOfMemorySegments: number;
  /** This process's segments, when they are not shared with other threads. */
  private readonly available: MemorySegment[] = [];
  /** The task manager's memory, when its threads share it. */
  private readonly shared: SharedNetworkMemory | undefined;
  /** What a segment of this pool has as its `owner`. */
  private readonly segmentOwner: unknown;
  private readonly allPools = new Set<LocalBufferPool>();
  /**
   * Segments promised to pools (their required counts) and to unpooled requests: of this pool's
   * thread when the memory is shared (the shared memory counts every thread's).
   */
  private numTotalRequiredBuffers = 0;
  private readonly availability = new AvailabilityHelper();
  /** Unpooled requests waiting for segments, served first-come as segments return. */
  private readonly segmentWaiters: SegmentWaiter[] = [];
  /** With shared memory: a watch of the shared free count is pending. */
  private watchingFreeSegments = false;
  private destroyed = false;

  /**
   * @param numberOfSegments how many segments to allocate (network memory / segment size)
   * @param segmentSize bytes per segment (default 32 KiB, `taskmanager.memory.segment-size`)
   */
  constructor(numberOfSegments: number, segmentSize?: number);
  /**
   * This thread's pool over the network memory the threads of a task manager share: it
   * allocates nothing.
   */
  constructor(sharedMemory: SharedNetworkMemory);
  constructor(numberOfSegmentsOrMemory: number | SharedNetworkMemory, segmentSize = 32 * 1024) {
    if (typeof numberOfSegmentsOrMemory !== "number") {
      const shared = numberOfSegmentsOrMemory;
      this.shared = shared;
      this.segmentOwner = shared;
      this.segmentSize = shared.segmentSize;
      this.totalNumberOfMemorySegments = shared.numberOfSegments;
      this.watchGeneration(shared.getGeneration());
      return;
    }
    const numberOfSegments = numberOfSegmentsOrMemory;
    this.shared = undefined;
    this.segmentOwner = this;
    if (!Number.isInteger(numberOfSegments) || numberOfSegments < 0) {
      throw new IllegalArgumentError(
        `number of network segments must be a non-negative integer, got ${numberOfSegments}`,
      );
    }
    if (!Number.isInteger(segmentSize) || segmentSize < 64) {
      throw new IllegalArgumentError(`segment size must be an integer >= 64, got ${segmentSize}`);
    }
    this.segmentSize = segmentSize;
    this.totalNumberOfMemorySegments = numberOfSegments;
    // One allocation for all segments: the process's network memory is one block of known size.
    const memory = Buffer.allocUnsafeSlow(numberOfSegments * segmentSize);
    for (let i = numberOfSegments - 1; i >= 0; i--) {
      const view = memory.subarray(i * segmentSize, (i + 1) * segmentSize);
      this.available.push(MemorySegment.wrap(view, this));
    }
    if (numberOfSegments === 0) this.availability.resetUnavailable();
  }

  /** Sized from a byte budget: floor(networkMemoryBytes / segmentSize) segments. */
  static fromMemorySize(networkMemoryBytes: number, segmentSize = 32 * 1024): NetworkBufferPool {
    return new NetworkBufferPool(Math.floor(networkMemoryBytes / segmentSize), segmentSize);
  }

  // ---------------------------------------------------------------- pooled (LocalBufferPool) side

  /**
   * Creates a LocalBufferPool that is guaranteed `numRequired` segments and may use up to
   * `maxUsed`. Fails with {@link InsufficientBuffersError} (naming the counts and config keys)
   * when the required segments cannot be guaranteed.
   */
  createBufferPool(
    numRequired: number,
    maxUsed: number,
    options: LocalBufferPoolOptions = {},
  ): LocalBufferPool {
    this.checkNotDestroyed();
    if (!Number.isInteger(numRequired) || numRequired < 0) {
      throw new IllegalArgumentError(`required segments must be >= 0, got ${numRequired}`);
    }
    if (!(maxUsed >= numRequired)) {
      throw new IllegalArgumentError(
        `max segments (${maxUsed}) must be >= required segments (${numRequired})`,
      );
    }
    this.reserve(numRequired, "a new buffer pool");
    let pool: LocalBufferPool;
    try {
      pool = new LocalBufferPool(this, numRequired, maxUsed, options);
    } catch (error) {
      // Invalid options: give the guarantee back, or it would be lost for good.
      this.unreserve(numRequired);
      throw error;
    }
    this.allPools.add(pool);
    this.redistributeBuffers();
    return pool;
  }

  /** Called by a LocalBufferPool when it is destroyed; frees its guarantee and re-spreads. */
  destroyBufferPool(pool: LocalBufferPool): void {
    if (!this.allPools.delete(pool)) return;
    this.unreserve(pool.getNumberOfRequiredMemorySegments());
    this.redistributeBuffers();
  }

  /** @internal A LocalBufferPool takes one free segment, or nothing when none is free. */
  requestPooledMemorySegment(): MemorySegment | undefined {
    const segment = this.takeOne();
    if (segment === undefined || this.freeSegments() === 0) this.markUnavailable();
    return segment;
  }

  /** @internal A LocalBufferPool gives a segment back. */
  recyclePooledMemorySegment(segment: MemorySegment): void {
    this.returnSegment(segment);
  }

  // ----------------------------------------------------------- unpooled (exclusive buffers) side

  /**
   * Takes `numberOfSegmentsToRequest` segments out of the pool for one owner (an input channel's
   * exclusive buffers). They count as required: fails with {@link InsufficientBuffersError} rather
   * than taking memory that other pools were promised.
   */
  requestUnpooledMemorySegments(numberOfSegmentsToRequest: number): MemorySegment[] {
    this.checkNotDestroyed();
    if (!Number.isInteger(numberOfSegmentsToRequest) || numberOfSegmentsToRequest < 0) {
      throw new IllegalArgumentError(
        `number of segments to request must be >= 0, got ${numberOfSegmentsToRequest}`,
      );
    }
    if (numberOfSegmentsToRequest === 0) return [];
    this.reserve(numberOfSegmentsToRequest, "exclusive channel buffers");
    // Pools may hold more than their guarantee right now; shrink them first so the segments can
    // come back. In a single-threaded runtime a pool gives its excess back as buffers recycle, so
    // what is free *now* is what we can hand out.
    this.redistributeBuffers();
    const segments = this.takeAvailable(numberOfSegmentsToRequest);
    if (segments.length < numberOfSegmentsToRequest) {
      for (const segment of segments) this.returnSegment(segment);
      this.unreserve(numberOfSegmentsToRequest);
      this.redistributeBuffers();
      throw new InsufficientBuffersError(
        `Insufficient number of network buffers: required ${numberOfSegmentsToRequest} exclusive ` +
          `buffers, but only ${segments.length} are free right now (others are in use by ` +
          `buffer pools beyond their guarantee). The total number of network buffers is ` +
          `${this.totalNumberOfMemorySegments} of ${this.segmentSize} bytes each. ` +
          INSUFFICIENT_BUFFERS_HINT,
      );
    }
    return segments;
  }

  /**
   * Takes `count` segments for one owner (an input channel's exclusive buffers), like
   * {@link requestUnpooledMemorySegments}, but when other pools still hold segments beyond their
   * guarantee it waits up to `timeoutMs` for them to come back, as Flink's request does for
   * `taskmanager.network.memory.buffers-request-timeout`. A task deployed while other pools are
   * busy therefore gets its buffers instead of failing spuriously.
   *
   * @returns the segments at once when enough are free, otherwise a promise of them. The
   *   promise rejects with {@link InsufficientBuffersError} (cause {@link TimeoutError}) naming
   *   the timeout key when they did not come back in time, and with
   *   {@link BufferPoolDestroyedError} when the pool is destroyed meanwhile; the guarantee is
   *   given back in both cases.
   * @throws InsufficientBuffersError at once (not through the promise) when the segments cannot
   *   even be guaranteed: waiting could not help.
   */
  requestUnpooledMemorySegmentsWithin(
    count: number,
    timeoutMs: number,
  ): MemorySegment[] | Promise<MemorySegment[]> {
    this.checkNotDestroyed();
    if (!Number.isInteger(count) || count < 0) {
      throw new IllegalArgumentError(`number of segments to request must be >= 0, got ${count}`);
    }
    if (count === 0) return [];
    this.reserve(count, "exclusive channel buffers");
    // Shrinking the other pools to their new share makes them give their excess back as their
    // buffers are recycled.
    this.redistributeBuffers();
    let taken: MemorySegment[] = [];
    if (this.segmentWaiters.length === 0) {
      // Earlier waiters are served first; a lone request takes what is free now.
      taken = this.takeAvailable(count);
      if (taken.length === count) return taken;
    }
    return new Promise<MemorySegment[]>((resolve, reject) => {
      const waiter: SegmentWaiter = { count, segments: taken, resolve, reject, timer: undefined };
      waiter.timer = setTimeout(() => this.expireWaiter(waiter, timeoutMs), timeoutMs);
      this.segmentWaiters.push(waiter);
      // Segments freed by another thread reach this pool through the shared free count only.
      if (this.shared !== undefined) this.markUnavailable();
    });
  }

  /** Takes up to `count` free segments (fewer when fewer are free). */
  private takeAvailable(count: number): MemorySegment[] {
    const segments: MemorySegment[] = [];
    while (segments.length < count) {
      const segment = this.takeOne();
      if (segment === undefined) break;
      segments.push(segment);
    }
    if (this.freeSegments() === 0) this.markUnavailable();
    return segments;
  }

  /** One free segment (from this process's list, or the shared free list), or none. */
  private takeOne(): MemorySegment | undefined {
    const shared = this.shared;
    if (shared === undefined) return this.available.pop();
    const index = shared.takeSegment();
    return index < 0 ? undefined : shared.segment(index);
  }

  /** Segments free now: this process's, or those of every thread sharing the memory. */
  private freeSegments(): number {
    return this.shared === undefined
      ? this.available.length
      : this.shared.getNumberOfFreeSegments();
  }

  private expireWaiter(waiter: SegmentWaiter, timeoutMs: number): void {
    const index = this.segmentWaiters.indexOf(waiter);
    if (index < 0) return;
    this.segmentWaiters.splice(index, 1);
    const held = waiter.segments.length;
    this.giveBack(waiter);
    waiter.reject(
      new InsufficientBuffersError(
        `Insufficient number of network buffers: required ${waiter.count} exclusive buffers, ` +
          `but only ${held} came back from other buffer pools within ${timeoutMs} ms ` +
          `('${BUFFERS_REQUEST_TIMEOUT_KEY}'). The total number of network buffers is ` +
          `${this.totalNumberOfMemorySegments} of ${this.segmentSize} bytes each. Other pools ` +
          `may simply hold them longer than the timeout: raise it. ${INSUFFICIENT_BUFFERS_HINT}`,
        { cause: new TimeoutError(`no free segments within ${timeoutMs} ms`) },
      ),
    );
  }

  /** Returns what a waiter collected and its guarantee. */
  private giveBack(waiter: SegmentWaiter): void {
    if (waiter.timer !== undefined) clearTimeout(waiter.timer);
    waiter.timer = undefined;
    for (const segment of waiter.segments.splice(0)) this.returnSegment(segment);
    this.unreserve(waiter.count);
    this.redistributeBuffers();
  }

  /** Returns segments taken with `requestUnpooledMemorySegments` and releases their guarantee. */
  recycleUnpooledMemorySegments(segments: readonly MemorySegment[]): void {
    for (const segment of segments) this.returnSegment(segment);
    this.unreserve(segments.length);
    this.redistributeBuffers();
  }

  /**
   * True when the segments are a {@link SharedNetworkMemory}'s (a `SharedArrayBuffer` the task
   * manager's slot threads share), which V8 copies into and out of fastest at matching alignment
   * (see docs/architecture.md, "Copies into and out of shared memory").
   */
  isSharedMemory(): boolean {
    return this.shared !== undefined;
  }

  // ----------------------------------------------------------------------------------- metrics

  /** Free segments: with shared memory, those free on every thread of the task manager. */
  getNumberOfAvailableMemorySegments(): number {
    return this.freeSegments();
  }

  getNumberOfUsedMemorySegments(): number {
    return this.totalNumberOfMemorySegments - this.freeSegments();
  }

  /** Segments no pool or channel is guaranteed (on any thread); what is spread as excess. */
  getNumberOfUnreservedSegments(): number {
    return this.totalNumberOfMemorySegments - this.requiredSegments();
  }

  /** Segments guaranteed to pools and channels: of every thread when the memory is shared. */
  private requiredSegments(): number {
    return this.shared === undefined
      ? this.numTotalRequiredBuffers
      : this.shared.getNumberOfRequiredSegments();
  }

  getNumberOfRegisteredBufferPools(): number {
    return this.allPools.size;
  }

  /**
   * How much of the network memory the pools and channels could ask for, in percent of all
   * segments (Flink's `RequestedMemoryUsage`): a bounded pool counts its maximum size, an
   * unbounded one twice what it holds, and exclusive channel buffers as handed out. Above 100
   * the tasks want more than there is, and throughput may suffer.
   */
  getEstimatedRequestedSegmentsUsage(): number {
    if (this.totalNumberOfMemorySegments === 0) return 0;
    let requested = this.requiredSegments();
    for (const pool of this.allPools) {
      // What the required counts already hold for this pool is replaced by its estimate.
      requested -= pool.getNumberOfRequiredMemorySegments();
      const max = pool.getMaxNumberOfMemorySegments();
      requested +=
        max < Number.MAX_SAFE_INTEGER
          ? max
          : 2 * (pool.bestEffortGetNumOfUsedBuffers() + pool.getNumberOfAvailableMemorySegments());
    }
    return Math.floor((100 * requested) / this.totalNumberOfMemorySegments);
  }

  /** Used segments / total, in [0, 1]. */
  getUsage(): number {
    if (this.totalNumberOfMemorySegments === 0) return 0;
    return this.getNumberOfUsedMemorySegments() / this.totalNumberOfMemorySegments;
  }

  isAvailable(): boolean {
    if (this.shared !== undefined && !this.destroyed && this.freeSegments() === 0) {
      this.markUnavailable();
    }
    return this.availability.isAvailable();
  }

  /** Resolves when at least one segment is free (or the pool was destroyed). */
  getAvailableFuture(): Promise<void> {
    this.isAvailable();
    return this.availability.getAvailableFuture();
  }

  /**
   * No segment is free. With shared memory another thread may free one: watch the shared free
   * count, then serve the waiting requests and wake the pools.
   */
  private markUnavailable(): void {
    this.availability.resetUnavailable();
    const shared = this.shared;
    if (shared === undefined || this.watchingFreeSegments || this.destroyed) return;
    this.watchingFreeSegments = true;
    void shared.whenSegmentFree().then(() => {
      this.watchingFreeSegments = false;
      if (this.destroyed) return;
      this.serveWaitersFromFreeList();
      if (this.segmentWaiters.length > 0 || this.freeSegments() === 0) this.markUnavailable();
      else this.availability.resetAvailable();
    });
  }

  /** Waiting exclusive requests take what other threads freed, first come first served. */
  private serveWaitersFromFreeList(): void {
    for (;;) {
      const waiter = this.segmentWaiters[0];
      if (waiter === undefined) return;
      const segment = this.takeOne();
      if (segment === undefined) return;
      this.giveToWaiter(waiter, segment);
    }
  }

  /**
   * With shared memory: re-spreads this thread's share whenever another thread's guarantees or
   * needs changed, for as long as this pool is not destroyed.
   */
  private watchGeneration(seen: number): void {
    const shared = this.shared;
    if (shared === undefined) return;
    void shared.whenGenerationChanges(seen).then(() => {
      if (this.destroyed) return;
      const generation = shared.getGeneration();
      this.redistributeBuffers();
      this.watchGeneration(generation);
    });
  }

  // --------------------------------------------------------------------------------- lifecycle

  /**
   * Destroys every LocalBufferPool, then this pool. Segments still leased stay valid memory until
   * their holders drop them, but no new request succeeds. Idempotent.
   */
  destroy(): void {
    if (this.destroyed) return;
    for (const pool of [...this.allPools]) pool.destroy();
    for (const waiter of this.segmentWaiters.splice(0)) {
      this.giveBack(waiter);
      waiter.reject(new BufferPoolDestroyedError("NetworkBufferPool has been destroyed"));
    }
    this.destroyed = true;
    this.availability.resetAvailable();
  }

  isDestroyed(): boolean {
    return this.destroyed;
  }

  private returnSegment(segment: MemorySegment): void {
    if (segment.owner !== this.segmentOwner) {
      throw new IllegalStateError("segment returned to a NetworkBufferPool that does not own it");
    }
    const waiter = this.segmentWaiters[0];
    if (waiter !== undefined) {
      // A waiting exclusive request was guaranteed these segments: it gets them first.
      this.giveToWaiter(waiter, segment);
      return;
    }
    const shared = this.shared;
    if (shared !== undefined) {
      shared.giveSegment(shared.indexOf(segment));
      if (!this.destroyed) this.availability.resetAvailable();
      return;
    }
    this.available.push(segment);
    if (this.available.length === 1) this.availability.resetAvailable();
  }

  private giveToWaiter(waiter: SegmentWaiter, segment: MemorySegment): void {
    waiter.segments.push(segment);
    if (waiter.segments.length === waiter.count) {
      this.segmentWaiters.shift();
      if (waiter.timer !== undefined) clearTimeout(waiter.timer);
      waiter.timer = undefined;
      waiter.resolve(waiter.segments);
    }
  }

  /** Gives back `count` guaranteed segments (of this thread, when the memory is shared). */
  private unreserve(count: number): void {
    this.numTotalRequiredBuffers -= count;
    this.shared?.release(count);
  }

  private reserve(count: number, what: string): void {
    const unreserved = this.totalNumberOfMemorySegments - this.requiredSegments();
    if (this.shared !== undefined) {
      if (count > 0 && !this.shared.reserve(count)) this.throwInsufficient(count, unreserved, what);
      this.numTotalRequiredBuffers += count;
      return;
    }
    if (count > unreserved) this.throwInsufficient(count, unreserved, what);
    this.numTotalRequiredBuffers += count;
  }

  private throwInsufficient(count: number, unreserved: number, what: string): never {
    throw new InsufficientBuffersError(
      `Insufficient number of network buffers for ${what}: required ${count}, but only ` +
        `${unreserved} of ${this.totalNumberOfMemorySegments} are not yet guaranteed to other ` +
        `pools (segment size ${this.segmentSize} bytes). ${INSUFFICIENT_BUFFERS_HINT}`,
    );
  }

  private checkNotDestroyed(): void {
    if (this.destroyed) {
      throw new BufferPoolDestroyedError("NetworkBufferPool has been destroyed");
    }
  }

  /**
   * Gives every pool its required segments plus a share of the unreserved ones, proportional to
   * how many more than required it may use (its max minus required, capped at the unreserved
   * count as in Flink, so an unbounded pool does not starve bounded ones).
   */
  private redistributeBuffers(): void {
    const unreserved = this.totalNumberOfMemorySegments - this.requiredSegments();
    let totalCapacity = 0;
    for (const pool of this.allPools) {
      totalCapacity += Math.min(
        unreserved,
        pool.getMaxNumberOfMemorySegments() - pool.getNumberOfRequiredMemorySegments(),
      );
    }
    // With shared memory the other threads' pools want their part of the excess too.
    const toDistribute =
      this.shared === undefined
        ? Math.min(unreserved, totalCapacity)
        : this.shared.excessShare(this.destroyed ? 0 : Math.max(0, totalCapacity), unreserved);
    if (unreserved <= 0 || totalCapacity <= 0 || toDistribute <= 0) {
      for (const pool of this.allPools)
        pool.setNumBuffers(pool.getNumberOfRequiredMemorySegments());
      return;
    }
    let partsUsed = 0;
    let distributed = 0;
    for (const pool of this.allPools) {
      const excessMax = Math.min(
        unreserved,
        pool.getMaxNumberOfMemorySegments() - pool.getNumberOfRequiredMemorySegments(),
      );
      if (excessMax === 0) {
        pool.setNumBuffers(pool.getNumberOfRequiredMemorySegments());
        continue;
      }
      partsUsed += excessMax;
      // Cumulative rounding in integers (Flink's formula): the shares add up to exactly
      // `toDistribute` because the last pool's cumulative value is `toDistribute` itself.
      const share = Math.floor((toDistribute * partsUsed) / totalCapacity) - distributed;
      distributed += share;
      pool.setNumBuffers(pool.getNumberOfRequiredMemorySegments() + share);
    }
  }
}
