import {
  BufferPoolDestroyedError,
  IllegalArgumentError,
  IllegalStateError,
  InsufficientBuffersError,
} from "../errors.js";
import { AvailabilityHelper, type AvailabilityProvider } from "./availability.js";
import { LocalBufferPool, type LocalBufferPoolOptions } from "./local-buffer-pool.js";
import { MemorySegment } from "./memory-segment.js";

/** The config keys a user raises when buffers run out; named in error messages. */
const NETWORK_MEMORY_KEYS =
  "'taskmanager.memory.network.min' / 'taskmanager.memory.network.max' (or 'taskmanager.memory.segment-size')";

/**
 * The process-wide pool of network memory (Flink's NetworkBufferPool): a fixed number of
 * equal-size segments allocated once, up front, so the memory a worker uses for shuffling is
 * bounded and known.
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
  private readonly memory: Buffer;
  private readonly available: MemorySegment[] = [];
  private readonly allPools = new Set<LocalBufferPool>();
  /** Segments promised to pools (their required counts) and to unpooled requests. */
  private numTotalRequiredBuffers = 0;
  private readonly availability = new AvailabilityHelper();
  private destroyed = false;

  /**
   * @param numberOfSegments how many segments to allocate (network memory / segment size)
   * @param segmentSize bytes per segment (default 32 KiB, `taskmanager.memory.segment-size`)
   */
  constructor(numberOfSegments: number, segmentSize = 32 * 1024) {
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
    this.memory = Buffer.allocUnsafeSlow(numberOfSegments * segmentSize);
    for (let i = numberOfSegments - 1; i >= 0; i--) {
      const view = this.memory.subarray(i * segmentSize, (i + 1) * segmentSize);
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
      this.numTotalRequiredBuffers -= numRequired;
      throw error;
    }
    this.allPools.add(pool);
    this.redistributeBuffers();
    return pool;
  }

  /** Called by a LocalBufferPool when it is destroyed; frees its guarantee and re-spreads. */
  destroyBufferPool(pool: LocalBufferPool): void {
    if (!this.allPools.delete(pool)) return;
    this.numTotalRequiredBuffers -= pool.getNumberOfRequiredMemorySegments();
    this.redistributeBuffers();
  }

  /** @internal A LocalBufferPool takes one free segment, or nothing when none is free. */
  requestPooledMemorySegment(): MemorySegment | undefined {
    const segment = this.available.pop();
    if (this.available.length === 0) this.availability.resetUnavailable();
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
    if (this.available.length < numberOfSegmentsToRequest) {
      this.numTotalRequiredBuffers -= numberOfSegmentsToRequest;
      this.redistributeBuffers();
      throw new InsufficientBuffersError(
        `Insufficient number of network buffers: required ${numberOfSegmentsToRequest} exclusive ` +
          `buffers, but only ${this.available.length} are free right now (others are in use by ` +
          `buffer pools beyond their guarantee). The total number of network buffers is ` +
          `${this.totalNumberOfMemorySegments} of ${this.segmentSize} bytes each; raise ` +
          `${NETWORK_MEMORY_KEYS}.`,
      );
    }
    const segments: MemorySegment[] = [];
    for (let i = 0; i < numberOfSegmentsToRequest; i++) {
      segments.push(this.available.pop() as MemorySegment);
    }
    if (this.available.length === 0) this.availability.resetUnavailable();
    return segments;
  }

  /** Returns segments taken with `requestUnpooledMemorySegments` and releases their guarantee. */
  recycleUnpooledMemorySegments(segments: readonly MemorySegment[]): void {
    for (const segment of segments) this.returnSegment(segment);
    this.numTotalRequiredBuffers -= segments.length;
    this.redistributeBuffers();
  }

  // ----------------------------------------------------------------------------------- metrics

  getNumberOfAvailableMemorySegments(): number {
    return this.available.length;
  }

  getNumberOfUsedMemorySegments(): number {
    return this.totalNumberOfMemorySegments - this.available.length;
  }

  /** Segments no pool or channel is guaranteed; what is spread as excess. */
  getNumberOfUnreservedSegments(): number {
    return this.totalNumberOfMemorySegments - this.numTotalRequiredBuffers;
  }

  getNumberOfRegisteredBufferPools(): number {
    return this.allPools.size;
  }

  /** Used segments / total, in [0, 1]. */
  getUsage(): number {
    if (this.totalNumberOfMemorySegments === 0) return 0;
    return this.getNumberOfUsedMemorySegments() / this.totalNumberOfMemorySegments;
  }

  isAvailable(): boolean {
    return this.availability.isAvailable();
  }

  /** Resolves when at least one segment is free (or the pool was destroyed). */
  getAvailableFuture(): Promise<void> {
    return this.availability.getAvailableFuture();
  }

  // --------------------------------------------------------------------------------- lifecycle

  /**
   * Destroys every LocalBufferPool, then this pool. Segments still leased stay valid memory until
   * their holders drop them, but no new request succeeds. Idempotent.
   */
  destroy(): void {
    if (this.destroyed) return;
    for (const pool of [...this.allPools]) pool.destroy();
    this.destroyed = true;
    this.availability.resetAvailable();
  }

  isDestroyed(): boolean {
    return this.destroyed;
  }

  private returnSegment(segment: MemorySegment): void {
    if (segment.owner !== this) {
      throw new IllegalStateError("segment returned to a NetworkBufferPool that does not own it");
    }
    this.available.push(segment);
    if (this.available.length === 1) this.availability.resetAvailable();
  }

  private reserve(count: number, what: string): void {
    const unreserved = this.totalNumberOfMemorySegments - this.numTotalRequiredBuffers;
    if (count > unreserved) {
      throw new InsufficientBuffersError(
        `Insufficient number of network buffers for ${what}: required ${count}, but only ` +
          `${unreserved} of ${this.totalNumberOfMemorySegments} are not yet guaranteed to other ` +
          `pools (segment size ${this.segmentSize} bytes). Raise ${NETWORK_MEMORY_KEYS}.`,
      );
    }
    this.numTotalRequiredBuffers += count;
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
    const unreserved = this.totalNumberOfMemorySegments - this.numTotalRequiredBuffers;
    let totalCapacity = 0;
    for (const pool of this.allPools) {
      totalCapacity += Math.min(
        unreserved,
        pool.getMaxNumberOfMemorySegments() - pool.getNumberOfRequiredMemorySegments(),
      );
    }
    if (unreserved <= 0 || totalCapacity <= 0) {
      for (const pool of this.allPools)
        pool.setNumBuffers(pool.getNumberOfRequiredMemorySegments());
      return;
    }
    const toDistribute = Math.min(unreserved, totalCapacity);
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
