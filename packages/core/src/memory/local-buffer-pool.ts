import { BufferPoolDestroyedError, IllegalArgumentError, IllegalStateError } from "../errors.js";
import { AvailabilityHelper, type AvailabilityProvider } from "./availability.js";
import { BufferBuilder } from "./buffer-builder.js";
import type { BufferListener } from "./buffer-listener.js";
import type { BufferRecycler } from "./buffer-recycler.js";
import type { MemorySegment } from "./memory-segment.js";
import { NetworkBuffer } from "./network-buffer.js";
import type { NetworkBufferPool } from "./network-buffer-pool.js";

/** Options of a LocalBufferPool beyond its required and maximum size. */
export interface LocalBufferPoolOptions {
  /** Subpartitions (output channels) that request builders by index; 0 for input gates. */
  numberOfSubpartitions?: number;
  /**
   * Once one subpartition holds this many buffers the pool reports unavailable, which bounds
   * the memory a skewed channel can take (`taskmanager.network.memory.max-buffers-per-channel`).
   */
  maxBuffersPerChannel?: number;
  /**
   * Extra segments a writer may take beyond the pool size when nothing else is free, so a record
   * in flight can be completed; while any is in use the pool is unavailable.
   */
  maxOverdraftBuffersPerGate?: number;
  /** A name for error messages and metrics (e.g. the partition or gate id). */
  name?: string;
}

/**
 * A bounded pool of segments for one result partition or input gate (Flink's LocalBufferPool).
 *
 * It is guaranteed `numberOfRequiredMemorySegments` segments of its NetworkBufferPool and may use
 * up to its current size (required plus a share of the excess, set by the NetworkBufferPool),
 * capped by its maximum. Segments are taken from the global pool lazily. Requests never block:
 * they return `undefined` when nothing is free, and `isAvailable()` / `getAvailableFuture()` tell
 * a producer when to continue (backpressure without blocking the event loop).
 */
export class LocalBufferPool implements BufferRecycler, AvailabilityProvider {
  readonly name: string;
  private readonly networkBufferPool: NetworkBufferPool;
  private readonly numberOfRequiredMemorySegments: number;
  private readonly maxNumberOfMemorySegments: number;
  private currentPoolSize: number;
  private readonly availableMemorySegments: MemorySegment[] = [];
  private readonly registeredListeners: BufferListener[] = [];
  /** Segments this pool took from the global pool (free list + handed out), overdraft excluded. */
  private numberOfRequestedMemorySegments = 0;
  private numberOfRequestedOverdraftMemorySegments = 0;
  private readonly maxOverdraftBuffersPerGate: number;
  private readonly maxBuffersPerChannel: number;
  private readonly subpartitionBuffersCount: number[];
  private readonly subpartitionRecyclers: BufferRecycler[];
  private unavailableSubpartitionsCount = 0;
  private readonly availability = new AvailabilityHelper();
  private waitingForGlobal = false;
  private destroyed = false;

  /** @internal Created by `NetworkBufferPool.createBufferPool`. */
  constructor(
    networkBufferPool: NetworkBufferPool,
    numberOfRequiredMemorySegments: number,
    maxNumberOfMemorySegments: number,
    options: LocalBufferPoolOptions = {},
  ) {
    const numberOfSubpartitions = options.numberOfSubpartitions ?? 0;
    const maxBuffersPerChannel = options.maxBuffersPerChannel ?? Number.MAX_SAFE_INTEGER;
    if (numberOfSubpartitions < 0 || !Number.isInteger(numberOfSubpartitions)) {
      throw new IllegalArgumentError(
        `numberOfSubpartitions must be >= 0, got ${numberOfSubpartitions}`,
      );
    }
    if (maxBuffersPerChannel <= 0) {
      throw new IllegalArgumentError(
        `maxBuffersPerChannel must be > 0, got ${maxBuffersPerChannel}`,
      );
    }
    this.name = options.name ?? "LocalBufferPool";
    this.networkBufferPool = networkBufferPool;
    this.numberOfRequiredMemorySegments = numberOfRequiredMemorySegments;
    this.maxNumberOfMemorySegments = maxNumberOfMemorySegments;
    this.currentPoolSize = numberOfRequiredMemorySegments;
    this.maxOverdraftBuffersPerGate = options.maxOverdraftBuffersPerGate ?? 0;
    this.maxBuffersPerChannel = maxBuffersPerChannel;
    this.subpartitionBuffersCount = new Array<number>(numberOfSubpartitions).fill(0);
    this.subpartitionRecyclers = Array.from({ length: numberOfSubpartitions }, (_, channel) => ({
      recycle: (segment: MemorySegment) => this.recycleSegment(segment, channel),
    }));
    this.checkAndUpdateAvailability();
  }

  // ------------------------------------------------------------------------------- requests

  /** A free buffer (not tied to a subpartition), or `undefined` when none can be had now. */
  requestBuffer(): NetworkBuffer | undefined {
    const segment = this.requestMemorySegment(-1);
    return segment === undefined ? undefined : new NetworkBuffer(segment, this);
  }

  /**
   * A BufferBuilder for `targetChannel` (counted against max-buffers-per-channel), or `undefined`
   * when none can be had now. May hand out an overdraft segment when the pool is exhausted.
   */
  requestBufferBuilder(targetChannel = -1): BufferBuilder | undefined {
    const segment = this.requestMemorySegment(targetChannel);
    if (segment === undefined) return undefined;
    const recycler = targetChannel >= 0 ? this.subpartitionRecyclers[targetChannel] : this;
    return new BufferBuilder(segment, recycler ?? this);
  }

  /**
   * A raw segment; the caller returns it with `recycle(segment)`, or with
   * `recycle(segment, targetChannel)` when it was requested for a channel.
   */
  requestMemorySegment(targetChannel = -1): MemorySegment | undefined {
    this.checkNotDestroyed();
    if (targetChannel >= this.subpartitionBuffersCount.length) {
      throw new IllegalArgumentError(
        `${this.name}: channel ${targetChannel} out of [0, ${this.subpartitionBuffersCount.length})`,
      );
    }
    let segment = this.availableMemorySegments.pop();
    if (segment === undefined) segment = this.requestFromGlobal();
    if (segment === undefined) segment = this.requestOverdraft();
    if (segment !== undefined && targetChannel >= 0) {
      const count = (this.subpartitionBuffersCount[targetChannel] ?? 0) + 1;
      this.subpartitionBuffersCount[targetChannel] = count;
      if (count === this.maxBuffersPerChannel) this.unavailableSubpartitionsCount++;
    }
    this.checkAndUpdateAvailability();
    return segment;
  }

  private requestFromGlobal(): MemorySegment | undefined {
    if (this.numberOfRequestedMemorySegments >= this.currentPoolSize) return undefined;
    const segment = this.networkBufferPool.requestPooledMemorySegment();
    if (segment !== undefined) this.numberOfRequestedMemorySegments++;
    return segment;
  }

  private requestOverdraft(): MemorySegment | undefined {
    if (this.numberOfRequestedOverdraftMemorySegments >= this.maxOverdraftBuffersPerGate) {
      return undefined;
    }
    const segment = this.networkBufferPool.requestPooledMemorySegment();
    if (segment !== undefined) this.numberOfRequestedOverdraftMemorySegments++;
    return segment;
  }

  // -------------------------------------------------------------------------------- recycling

  /**
   * Returns a segment (BufferRecycler). `channel` is the subpartition it was requested for with
   * `requestMemorySegment(channel)`; without it that channel's count would never go down.
   */
  recycle(segment: MemorySegment, channel = -1): void {
    if (channel >= this.subpartitionBuffersCount.length) {
      throw new IllegalArgumentError(
        `${this.name}: channel ${channel} out of [0, ${this.subpartitionBuffersCount.length})`,
      );
    }
    this.recycleSegment(segment, channel);
  }

  private recycleSegment(segment: MemorySegment, channel: number): void {
    if (channel >= 0) {
      const count = (this.subpartitionBuffersCount[channel] ?? 0) - 1;
      if (count < 0) {
        throw new IllegalStateError(`${this.name}: channel ${channel} recycled more than it held`);
      }
      this.subpartitionBuffersCount[channel] = count;
      if (count === this.maxBuffersPerChannel - 1) this.unavailableSubpartitionsCount--;
    }
    if (this.numberOfRequestedOverdraftMemorySegments > 0) {
      // Overdraft goes back first, so the pool leaves its overdraft state as soon as it can.
      this.numberOfRequestedOverdraftMemorySegments--;
      this.networkBufferPool.recyclePooledMemorySegment(segment);
    } else if (this.destroyed || this.numberOfRequestedMemorySegments > this.currentPoolSize) {
      this.numberOfRequestedMemorySegments--;
      this.networkBufferPool.recyclePooledMemorySegment(segment);
    } else if (!this.offerToListener(segment)) {
      this.availableMemorySegments.push(segment);
    }
    this.checkAndUpdateAvailability();
  }

  /** Hands `segment` to the first waiting listener; false when nobody waits. */
  private offerToListener(segment: MemorySegment): boolean {
    const listener = this.registeredListeners.shift();
    if (listener === undefined) return false;
    const wantsMore = listener.notifyBufferAvailable(new NetworkBuffer(segment, this));
    if (wantsMore) this.registeredListeners.push(listener);
    return true;
  }

  // -------------------------------------------------------------------------------- listeners

  /**
   * Registers `listener` to receive the next recycled buffer. Returns false, without
   * registering, when a buffer can be requested right now or the pool is destroyed.
   */
  addBufferListener(listener: BufferListener): boolean {
    if (this.destroyed) return false;
    if (this.canProvideSegment()) return false;
    this.registeredListeners.push(listener);
    this.waitForGlobalIfNeeded();
    return true;
  }

  /** Unregisters `listener`; a no-op when it is not registered. */
  removeBufferListener(listener: BufferListener): void {
    const index = this.registeredListeners.indexOf(listener);
    if (index >= 0) this.registeredListeners.splice(index, 1);
  }

  // ----------------------------------------------------------------------------------- sizing

  /**
   * Sets the pool's size (called by the NetworkBufferPool when it re-spreads excess). Capped by
   * the maximum; never below the required count. Excess segments go back as they are recycled.
   */
  setNumBuffers(numBuffers: number): void {
    if (numBuffers < this.numberOfRequiredMemorySegments) {
      throw new IllegalArgumentError(
        `${this.name}: pool size ${numBuffers} below required ${this.numberOfRequiredMemorySegments}`,
      );
    }
    this.currentPoolSize = Math.min(numBuffers, this.maxNumberOfMemorySegments);
    while (
      this.numberOfRequestedMemorySegments > this.currentPoolSize &&
      this.availableMemorySegments.length > 0
    ) {
      this.numberOfRequestedMemorySegments--;
      this.networkBufferPool.recyclePooledMemorySegment(
        this.availableMemorySegments.pop() as MemorySegment,
      );
    }
    this.fulfillListenersFromGlobal();
    this.checkAndUpdateAvailability();
  }

  /** The current size: how many segments the pool may hold now. */
  getNumBuffers(): number {
    return this.currentPoolSize;
  }

  /** True when its segments are shared memory ({@link NetworkBufferPool.isSharedMemory}). */
  isSharedMemory(): boolean {
    return this.networkBufferPool.isSharedMemory();
  }

  getNumberOfRequiredMemorySegments(): number {
    return this.numberOfRequiredMemorySegments;
  }

  getMaxNumberOfMemorySegments(): number {
    return this.maxNumberOfMemorySegments;
  }

  /** Segments on the pool's free list. */
  getNumberOfAvailableMemorySegments(): number {
    return this.availableMemorySegments.length;
  }

  /** Segments handed out and not yet recycled (overdraft included). */
  bestEffortGetNumOfUsedBuffers(): number {
    return Math.max(
      0,
      this.numberOfRequestedMemorySegments +
        this.numberOfRequestedOverdraftMemorySegments -
        this.availableMemorySegments.length,
    );
  }

  /** Overdraft segments in use. */
  getNumberOfRequestedOverdraftMemorySegments(): number {
    return this.numberOfRequestedOverdraftMemorySegments;
  }

  /** Buffers currently held by `channel` (for max-buffers-per-channel). */
  getNumberOfBuffersOfChannel(channel: number): number {
    return this.subpartitionBuffersCount[channel] ?? 0;
  }

  /** Used / size, the basis of Flink's outPoolUsage / inPoolUsage metrics (may exceed 1). */
  getUsage(): number {
    if (this.currentPoolSize === 0) return this.bestEffortGetNumOfUsedBuffers() > 0 ? 1 : 0;
    return this.bestEffortGetNumOfUsedBuffers() / this.currentPoolSize;
  }

  // ----------------------------------------------------------------------------- availability

  isAvailable(): boolean {
    return this.availability.isAvailable();
  }

  getAvailableFuture(): Promise<void> {
    return this.availability.getAvailableFuture();
  }

  private canProvideSegment(): boolean {
    return (
      this.availableMemorySegments.length > 0 ||
      (this.numberOfRequestedMemorySegments < this.currentPoolSize &&
        this.networkBufferPool.getNumberOfAvailableMemorySegments() > 0)
    );
  }

  private checkAndUpdateAvailability(): void {
    if (this.destroyed) {
      this.availability.resetAvailable();
      return;
    }
    const available =
      this.unavailableSubpartitionsCount === 0 &&
      this.numberOfRequestedOverdraftMemorySegments === 0 &&
      this.canProvideSegment();
    if (available) {
      this.availability.resetAvailable();
    } else {
      this.availability.resetUnavailable();
      this.waitForGlobalIfNeeded();
    }
  }

  /**
   * When the pool could grow but the global pool is empty, wake up once the global pool has a
   * segment again (Flink: requestMemorySegmentFromGlobalWhenAvailable).
   */
  private waitForGlobalIfNeeded(): void {
    if (this.waitingForGlobal || this.destroyed) return;
    if (this.availableMemorySegments.length > 0) return;
    if (this.numberOfRequestedMemorySegments >= this.currentPoolSize) return;
    if (this.networkBufferPool.isAvailable()) return;
    this.waitingForGlobal = true;
    void this.networkBufferPool.getAvailableFuture().then(() => {
      this.waitingForGlobal = false;
      if (this.destroyed) return;
      this.fulfillListenersFromGlobal();
      this.checkAndUpdateAvailability();
    });
  }

  private fulfillListenersFromGlobal(): void {
    while (this.registeredListeners.length > 0) {
      const segment = this.requestFromGlobal();
      if (segment === undefined) break;
      this.offerToListener(segment);
    }
  }

  // -------------------------------------------------------------------------------- lifecycle

  /**
   * Destroys the pool: free segments go back at once, segments in use as they are recycled;
   * listeners are told; later requests throw {@link BufferPoolDestroyedError}. Idempotent.
   */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const segment of this.availableMemorySegments.splice(0)) {
      this.numberOfRequestedMemorySegments--;
      this.networkBufferPool.recyclePooledMemorySegment(segment);
    }
    for (const listener of this.registeredListeners.splice(0)) listener.notifyBufferDestroyed();
    this.networkBufferPool.destroyBufferPool(this);
    this.availability.resetAvailable();
  }

  isDestroyed(): boolean {
    return this.destroyed;
  }

  toString(): string {
    return (
      `${this.name}[size=${this.currentPoolSize}, required=${this.numberOfRequiredMemorySegments}, ` +
      `max=${this.maxNumberOfMemorySegments}, requested=${this.numberOfRequestedMemorySegments}, ` +
      `available=${this.availableMemorySegments.length}, overdraft=${this.numberOfRequestedOverdraftMemorySegments}]`
    );
  }

  private checkNotDestroyed(): void {
    if (this.destroyed) {
      throw new BufferPoolDestroyedError(`${this.name} has been destroyed`);
    }
  }
}
