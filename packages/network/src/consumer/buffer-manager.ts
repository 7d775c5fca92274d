import {
  type BufferListener,
  type BufferRecycler,
  type LocalBufferPool,
  type MemorySegment,
  NetworkBuffer,
  type NetworkBufferPool,
} from "@sluice/core";

/** What the buffer manager tells its channel. */
export interface BufferManagerOwner {
  /** `credit` more buffers became available for the sender (to be announced with AddCredit). */
  notifyBufferAvailable(credit: number): void;
  /** The floating pool was destroyed while waiting (the gate is closing). */
  onBufferPoolDestroyed(): void;
}

/**
 * The buffers of one RemoteInputChannel (Flink's BufferManager): its exclusive segments, taken
 * from the NetworkBufferPool at setup, and floating buffers borrowed from the gate's pool while
 * the sender's backlog needs them. Every buffer in the available queue is one credit the sender
 * may use. Incoming data takes floating buffers first so they go back to the gate soonest.
 */
export class BufferManager implements BufferRecycler, BufferListener {
  private readonly owner: BufferManagerOwner;
  private readonly networkBufferPool: NetworkBufferPool;
  private readonly exclusiveSegments: MemorySegment[] = [];
  private readonly availableExclusive: MemorySegment[] = [];
  private readonly availableFloating: NetworkBuffer[] = [];
  private floatingPool: LocalBufferPool | undefined;
  /** Buffers the channel should hold: sender backlog + exclusive buffers. */
  private numRequiredBuffers = 0;
  private waitingForFloating = false;
  private released = false;

  constructor(owner: BufferManagerOwner, networkBufferPool: NetworkBufferPool) {
    this.owner = owner;
    this.networkBufferPool = networkBufferPool;
  }

  /**
   * Takes `count` exclusive segments. When other pools still hold them beyond their guarantee,
   * waits up to `timeoutMs` (`taskmanager.network.memory.buffers-request-timeout`) for them and
   * returns a promise that settles once they are here (or with InsufficientBuffersError);
   * otherwise returns undefined, done.
   *
   * @throws InsufficientBuffersError at once when the segments cannot even be guaranteed.
   */
  requestExclusiveBuffers(
    count: number,
    floatingPool: LocalBufferPool,
    timeoutMs: number,
  ): Promise<void> | undefined {
    this.floatingPool = floatingPool;
    this.numRequiredBuffers = count;
    const granted = this.networkBufferPool.requestUnpooledMemorySegmentsWithin(count, timeoutMs);
    if (Array.isArray(granted)) {
      this.addExclusive(granted);
      return undefined;
    }
    return granted.then((segments) => {
      if (this.released) {
        this.networkBufferPool.recycleUnpooledMemorySegments(segments);
        return;
      }
      this.addExclusive(segments);
    });
  }

  private addExclusive(segments: readonly MemorySegment[]): void {
    this.exclusiveSegments.push(...segments);
    this.availableExclusive.push(...segments);
  }

  getNumberOfExclusiveBuffers(): number {
    return this.exclusiveSegments.length;
  }

  /** Exclusive buffers holding data (received, not yet recycled by the consumer). */
  getNumberOfUsedExclusiveBuffers(): number {
    return this.exclusiveSegments.length - this.availableExclusive.length;
  }

  /** Floating buffers borrowed from the gate's pool and still empty (part of the credit). */
  getNumberOfAvailableFloatingBuffers(): number {
    return this.availableFloating.length;
  }

  /** Buffers the channel should hold: the sender's last backlog plus the exclusive buffers. */
  getNumberOfRequiredBuffers(): number {
    return this.numRequiredBuffers;
  }

  /** Buffers ready for incoming data (= credit the sender may have). */
  getNumberOfAvailableBuffers(): number {
    return this.availableExclusive.length + this.availableFloating.length;
  }

  /**
   * A buffer for one incoming data message, or `undefined` when none is available. As in Flink's
   * BufferManager, the required count drops with every buffer taken: the backlog it was computed
   * from included the buffer now arriving, so until the sender's next backlog comes the channel
   * must not borrow (or keep waiting for) a floating buffer for it again.
   */
  requestBuffer(): NetworkBuffer | undefined {
    if (this.numRequiredBuffers > 0) this.numRequiredBuffers--;
    const floating = this.availableFloating.shift();
    if (floating !== undefined) return floating;
    const segment = this.availableExclusive.pop();
    return segment === undefined ? undefined : new NetworkBuffer(segment, this);
  }

  /**
   * The sender has `backlog` buffers queued: borrow floating buffers until the available count
   * reaches backlog + exclusive. Returns how many were added (new credit).
   */
  requestFloatingBuffers(backlog: number): number {
    if (this.released || this.floatingPool === undefined) return 0;
    this.numRequiredBuffers = backlog + this.exclusiveSegments.length;
    let added = 0;
    while (this.getNumberOfAvailableBuffers() < this.numRequiredBuffers) {
      if (this.floatingPool.isDestroyed()) break;
      const buffer = this.floatingPool.requestBuffer();
      if (buffer === undefined) {
        if (!this.waitingForFloating && this.floatingPool.addBufferListener(this)) {
          this.waitingForFloating = true;
        }
        if (this.waitingForFloating) break;
        continue; // the pool had a buffer after all (raced with a recycle): try again
      }
      this.availableFloating.push(buffer);
      added++;
    }
    return added;
  }

  /** An exclusive buffer was consumed and recycled: one more credit (or a floating one goes back). */
  recycle(segment: MemorySegment): void {
    if (this.released) {
      this.networkBufferPool.recycleUnpooledMemorySegments([segment]);
      this.removeExclusive(segment);
      return;
    }
    this.availableExclusive.push(segment);
    if (
      this.getNumberOfAvailableBuffers() > this.numRequiredBuffers &&
      this.availableFloating.length > 0
    ) {
      // More than needed: give a floating buffer back instead of announcing credit.
      (this.availableFloating.shift() as NetworkBuffer).recycleBuffer();
      return;
    }
    this.owner.notifyBufferAvailable(1);
  }

  /** A floating buffer arrived from the gate pool (we were waiting). */
  notifyBufferAvailable(buffer: NetworkBuffer): boolean {
    this.waitingForFloating = false;
    if (this.released || this.getNumberOfAvailableBuffers() >= this.numRequiredBuffers) {
      buffer.recycleBuffer();
      return false;
    }
    this.availableFloating.push(buffer);
    this.owner.notifyBufferAvailable(1);
    const needMore = this.getNumberOfAvailableBuffers() < this.numRequiredBuffers;
    this.waitingForFloating = needMore;
    return needMore;
  }

  /**
   * The sender spent one credit on an empty buffer (Flink's rule for a receiver without
   * exclusive buffers: a finished buffer whose bytes were all sent earlier is still sent, so
   * that the credit granted for it is not held forever). The buffer that credit stood for is
   * taken and given back: a floating one to the gate's pool, where another channel may need it;
   * an exclusive one becomes available again and is announced as new credit.
   */
  releaseCreditOfEmptyBuffer(): void {
    if (this.released) return;
    const buffer = this.requestBuffer();
    if (buffer === undefined) return;
    buffer.recycleBuffer();
  }

  notifyBufferDestroyed(): void {
    this.waitingForFloating = false;
    this.owner.onBufferPoolDestroyed();
  }

  /**
   * Gives every unused floating buffer back to the gate and stops asking for more until the
   * sender announces a backlog again. Called when an aligned barrier blocked a channel that has
   * no exclusive buffers: it receives nothing until resumed, so buffers it holds would starve
   * the channels the alignment still waits for.
   */
  releaseFloatingBuffers(): void {
    this.numRequiredBuffers = 0;
    for (const buffer of this.availableFloating.splice(0)) buffer.recycleBuffer();
  }

  /**
   * Returns every buffer: floating ones to the gate pool, free exclusive segments to the
   * NetworkBufferPool now, exclusive segments still in use as they are recycled. Idempotent.
   */
  releaseAll(): void {
    if (this.released) return;
    this.released = true;
    if (this.waitingForFloating) this.floatingPool?.removeBufferListener(this);
    this.waitingForFloating = false;
    this.releaseFloatingBuffers();
    const free = this.availableExclusive.splice(0);
    for (const segment of free) this.removeExclusive(segment);
    if (free.length > 0) this.networkBufferPool.recycleUnpooledMemorySegments(free);
  }

  private removeExclusive(segment: MemorySegment): void {
    const index = this.exclusiveSegments.indexOf(segment);
    if (index >= 0) this.exclusiveSegments.splice(index, 1);
  }
}
