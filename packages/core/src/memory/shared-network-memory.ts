import { IllegalArgumentError, IllegalStateError } from "../errors.js";
import { MemorySegment } from "./memory-segment.js";
import { SharedSegmentFreeList } from "./shared-segment-free-list.js";

/**
 * What another thread needs to attach to a {@link SharedNetworkMemory}: plain data and shared
 * buffers, so it crosses `postMessage` and `workerData` as is (the buffers are shared, not
 * copied).
 */
export interface SharedNetworkMemoryHandle {
  /** The segments, one after the other. */
  readonly segments: SharedArrayBuffer;
  /** The free list, the counters and the state of every segment. */
  readonly control: SharedArrayBuffer;
  readonly numberOfSegments: number;
  readonly segmentSize: number;
  /** Threads that may attach (indices 0 .. maxThreads − 1). */
  readonly maxThreads: number;
}

// Global words, on a cache line of their own.
const FREE_COUNT = 0;
const REQUIRED = 1;
const GENERATION = 2;
const GLOBAL_WORDS = 16;
// Per thread: the segments it reserved (its guarantees) and the excess its pools could use.
const THREAD_REQUIRED = 0;
const THREAD_CAPACITY = 1;
const THREAD_WORDS = 2;

/**
 * A segment's state word: its owner thread in the top 8 bits, and in the low 24 bits how many
 * buffers of it are lent to other threads right now.
 */
const OWNER_SHIFT = 24;
const LOANS_MASK = 0xffffff;
/** Owner value of a segment on the free list. */
const FREE = 0xff;
/** Owner value of a segment whose owner thread died while some of it was lent out. */
const ORPHAN = 0xfe;
/** The most threads a task manager's memory can serve (owner values below ORPHAN). */
export const MAX_SHARED_MEMORY_THREADS = 0xfe;

const ownerOf = (state: number) => state >>> OWNER_SHIFT;
const loansOf = (state: number) => state & LOANS_MASK;
const stateOf = (owner: number, loans: number) => (owner << OWNER_SHIFT) | loans | 0;

/**
 * Where the free list starts, after the segments' states: on a cache line of its own (its head,
 * a 64-bit word, is 8-byte aligned there).
 */
function freeListBaseOf(statesBase: number, numberOfSegments: number): number {
  return Math.ceil((statesBase + numberOfSegments) / 16) * 16;
}

/** Resolves once `words[index]` is no longer `value` (or at once when it is not now). */
function whenChanged(words: Int32Array, index: number, value: number): Promise<void> {
  const wait = Atomics.waitAsync(words, index, value);
  return wait.async ? wait.value.then(() => undefined) : Promise.resolve();
}

/**
 * A task manager's network memory in shared memory, seen from one thread (index 0 is the thread
 * that created it, the task manager's main thread; slot threads attach with their own index).
 * Every thread's `NetworkBufferPool` draws from the same segments: the free list is a lock-free
 * stack ({@link SharedSegmentFreeList}), and what pools are guaranteed (their required segments) is
 * counted once for the whole task manager, so a guarantee given on one thread is never handed out
 * again on another.
 *
 * Every segment's state says which thread took it, so that the segments of a thread that died
 * can be taken back ({@link reclaimThread}) and none is lost. A buffer handed to another thread
 * without a copy is lent ({@link lend}): its segment stays its owner's, and the last loan of a
 * dead owner's segment returns it to the free list ({@link returnLoan}).
 */
export class SharedNetworkMemory {
  /** What another thread attaches with. */
  readonly handle: SharedNetworkMemoryHandle;
  /** This view's thread. */
  readonly threadIndex: number;
  readonly numberOfSegments: number;
  readonly segmentSize: number;
  private readonly words: Int32Array;
  private readonly bytes: Buffer;
  private readonly freeList: SharedSegmentFreeList;
  private readonly threadsBase: number;
  private readonly statesBase: number;
  /** This thread's MemorySegment object of each segment, made on first use. */
  private readonly views: (MemorySegment | undefined)[];

  private constructor(
    handle: SharedNetworkMemoryHandle,
    threadIndex: number,
    freeList: SharedSegmentFreeList | undefined,
  ) {
    if (!Number.isInteger(threadIndex) || threadIndex < 0 || threadIndex >= handle.maxThreads) {
      throw new IllegalArgumentError(
        `thread index ${threadIndex} out of [0, ${handle.maxThreads}) of the shared network memory`,
      );
    }
    this.handle = handle;
    this.threadIndex = threadIndex;
    this.numberOfSegments = handle.numberOfSegments;
    this.segmentSize = handle.segmentSize;
    this.words = new Int32Array(handle.control);
    this.bytes = Buffer.from(handle.segments);
    this.threadsBase = GLOBAL_WORDS;
    this.statesBase = this.threadsBase + handle.maxThreads * THREAD_WORDS;
    this.freeList =
      freeList ??
      SharedSegmentFreeList.attach(
        this.words,
        freeListBaseOf(this.statesBase, handle.numberOfSegments),
        handle.numberOfSegments,
      );
    this.views = new Array(handle.numberOfSegments);
  }

  /**
   * Allocates `numberOfSegments` segments of `segmentSize` bytes, all free, for up to
   * `maxThreads` threads, and returns the view of thread 0.
   */
  static create(
    numberOfSegments: number,
    segmentSize: number,
    maxThreads: number,
  ): SharedNetworkMemory {
    if (!Number.isInteger(numberOfSegments) || numberOfSegments < 0) {
      throw new IllegalArgumentError(
        `number of network segments must be a non-negative integer, got ${numberOfSegments}`,
      );
    }
    if (!Number.isInteger(segmentSize) || segmentSize < 64) {
      throw new IllegalArgumentError(`segment size must be an integer >= 64, got ${segmentSize}`);
    }
    if (!Number.isInteger(maxThreads) || maxThreads < 1 || maxThreads > MAX_SHARED_MEMORY_THREADS) {
      throw new IllegalArgumentError(
        `threads of the shared network memory must be in [1, ${MAX_SHARED_MEMORY_THREADS}], got ${maxThreads}`,
      );
    }
    if (numberOfSegments > LOANS_MASK) {
      throw new IllegalArgumentError(
        `the shared network memory holds at most ${LOANS_MASK} segments, got ${numberOfSegments}`,
      );
    }
    const statesBase = GLOBAL_WORDS + maxThreads * THREAD_WORDS;
    const freeListBase = freeListBaseOf(statesBase, numberOfSegments);
    const words = freeListBase + SharedSegmentFreeList.wordsFor(numberOfSegments);
    const handle: SharedNetworkMemoryHandle = {
      segments: new SharedArrayBuffer(numberOfSegments * segmentSize),
      control: new SharedArrayBuffer(words * 4),
      numberOfSegments,
      segmentSize,
      maxThreads,
    };
    const control = new Int32Array(handle.control);
    const freeList = SharedSegmentFreeList.initialize(control, freeListBase, numberOfSegments);
    for (let i = 0; i < numberOfSegments; i++) {
      Atomics.store(control, statesBase + i, stateOf(FREE, 0));
      freeList.offer(i);
    }
    Atomics.store(control, FREE_COUNT, numberOfSegments);
    return new SharedNetworkMemory(handle, 0, freeList);
  }

  /** The view of thread `threadIndex` on the memory `handle` describes. */
  static attach(handle: SharedNetworkMemoryHandle, threadIndex: number): SharedNetworkMemory {
    return new SharedNetworkMemory(handle, threadIndex, undefined);
  }

  // ------------------------------------------------------------------------------- segments

  /**
   * This thread's MemorySegment of segment `index` (always the same object; its `owner` is this
   * view).
   */
  segment(index: number): MemorySegment {
    let view = this.views[index];
    if (view === undefined) {
      if (!Number.isInteger(index) || index < 0 || index >= this.numberOfSegments) {
        throw new IllegalArgumentError(`segment ${index} out of [0, ${this.numberOfSegments})`);
      }
      const start = index * this.segmentSize;
      view = MemorySegment.wrap(this.bytes.subarray(start, start + this.segmentSize), this);
      this.views[index] = view;
    }
    return view;
  }

  /** The index of `segment` in this memory, or -1 when its bytes are elsewhere. */
  indexOf(segment: MemorySegment): number {
    const memory = segment.memory;
    if (memory.buffer !== this.handle.segments || memory.length !== this.segmentSize) return -1;
    const offset = memory.byteOffset;
    return offset % this.segmentSize === 0 ? offset / this.segmentSize : -1;
  }

  /** Takes a free segment for this thread; -1 when none is free right now. */
  takeSegment(): number {
    const index = this.freeList.poll();
    if (index < 0) return -1;
    Atomics.sub(this.words, FREE_COUNT, 1);
    Atomics.store(this.words, this.statesBase + index, stateOf(this.threadIndex, 0));
    return index;
  }

  /**
   * Gives a segment this thread took back to the free list, and wakes the threads waiting for
   * one when it was the first.
   *
   * @throws IllegalStateError when this thread does not own it or some of it is still lent out.
   */
  giveSegment(index: number): void {
    const state = Atomics.load(this.words, this.statesBase + index);
    if (ownerOf(state) !== this.threadIndex || loansOf(state) !== 0) {
      throw new IllegalStateError(
        `segment ${index} given back by thread ${this.threadIndex}, but its state is owner ${ownerOf(state)} with ${loansOf(state)} loans`,
      );
    }
    this.free(index);
  }

  private free(index: number): void {
    Atomics.store(this.words, this.statesBase + index, stateOf(FREE, 0));
    this.freeList.offer(index);
    if (Atomics.add(this.words, FREE_COUNT, 1) === 0) Atomics.notify(this.words, FREE_COUNT);
  }

  /** Segments on the free list now, over every thread. */
  getNumberOfFreeSegments(): number {
    return Math.max(0, Atomics.load(this.words, FREE_COUNT));
  }

  /** Resolves once a segment is free (at once when one is now). */
  whenSegmentFree(): Promise<void> {
    return whenChanged(this.words, FREE_COUNT, 0);
  }

  /** The thread that owns segment `index` now (for tests and diagnostics); -1 when it is free. */
  ownerOfSegment(index: number): number {
    const owner = ownerOf(Atomics.load(this.words, this.statesBase + index));
    return owner === FREE ? -1 : owner;
  }

  // ---------------------------------------------------------------------------------- loans

  /** A buffer of segment `index` is handed to another thread without a copy. */
  lend(index: number): void {
    const state = Atomics.add(this.words, this.statesBase + index, 1);
    if (loansOf(state) === LOANS_MASK) {
      throw new IllegalStateError(`segment ${index} is lent out more than ${LOANS_MASK} times`);
    }
  }

  /**
   * A buffer of segment `index` lent out came back (or its borrower died). When the owner died
   * meanwhile and this was the last loan, the segment goes back to the free list.
   */
  returnLoan(index: number): void {
    const cell = this.statesBase + index;
    for (;;) {
      const state = Atomics.load(this.words, cell);
      const loans = loansOf(state);
      if (loans === 0) {
        throw new IllegalStateError(`segment ${index} returned but not lent out`);
      }
      const orphanFreed = ownerOf(state) === ORPHAN && loans === 1;
      const next = orphanFreed ? stateOf(FREE, 0) : (state - 1) | 0;
      if (Atomics.compareExchange(this.words, cell, state, next) === state) {
        if (orphanFreed) this.free(index);
        return;
      }
    }
  }

  // --------------------------------------------------------------------------- guarantees

  /**
   * Guarantees `count` more segments to this thread's pools: false, and nothing reserved, when
   * fewer than `count` are not yet guaranteed to any thread.
   */
  reserve(count: number): boolean {
    for (;;) {
      const required = Atomics.load(this.words, REQUIRED);
      if (required + count > this.numberOfSegments) return false;
      if (Atomics.compareExchange(this.words, REQUIRED, required, required + count) === required) {
        Atomics.add(this.words, this.threadWord(this.threadIndex, THREAD_REQUIRED), count);
        this.bumpGeneration();
        return true;
      }
    }
  }

  /** Releases `count` segments this thread reserved. */
  release(count: number): void {
    if (count === 0) return;
    Atomics.sub(this.words, REQUIRED, count);
    Atomics.sub(this.words, this.threadWord(this.threadIndex, THREAD_REQUIRED), count);
    this.bumpGeneration();
  }

  /** Segments guaranteed to the pools of every thread. */
  getNumberOfRequiredSegments(): number {
    return Atomics.load(this.words, REQUIRED);
  }

  /** Segments guaranteed to the pools of thread `threadIndex`. */
  getNumberOfRequiredSegmentsOf(threadIndex: number): number {
    return Atomics.load(this.words, this.threadWord(threadIndex, THREAD_REQUIRED));
  }

  // ------------------------------------------------------------------- spreading the excess

  /**
   * This thread's share of the `toDistribute` segments nobody is guaranteed, when its pools
   * could use `capacity` more than their guarantees: in proportion to what the pools of every
   * thread could use. Publishes `capacity`, and tells the other threads to re-spread when it
   * changed.
   */
  excessShare(capacity: number, unreserved: number): number {
    const word = this.threadWord(this.threadIndex, THREAD_CAPACITY);
    if (Atomics.exchange(this.words, word, capacity) !== capacity) this.bumpGeneration();
    let total = 0;
    for (let t = 0; t < this.handle.maxThreads; t++) {
      total += Atomics.load(this.words, this.threadWord(t, THREAD_CAPACITY));
    }
    if (total <= 0 || capacity <= 0) return 0;
    return Math.floor((Math.min(unreserved, total) * capacity) / total);
  }

  /** Changes whenever a thread's guarantees or capacity change: every thread re-spreads. */
  getGeneration(): number {
    return Atomics.load(this.words, GENERATION);
  }

  /** Resolves once the generation is no longer `seen`. */
  whenGenerationChanges(seen: number): Promise<void> {
    return whenChanged(this.words, GENERATION, seen);
  }

  private bumpGeneration(): void {
    Atomics.add(this.words, GENERATION, 1);
    Atomics.notify(this.words, GENERATION);
  }

  // ------------------------------------------------------------------------- a dead thread

  /**
   * Takes back what thread `threadIndex` held when it died: its guarantees, and every segment it
   * owned. A segment still lent to another thread returns to the free list with its last loan.
   * Returns how many segments went back to the free list now. Call it once the thread is gone,
   * from another thread.
   */
  reclaimThread(threadIndex: number): number {
    if (threadIndex === this.threadIndex) {
      throw new IllegalStateError(`thread ${threadIndex} cannot reclaim its own segments`);
    }
    const required = Atomics.exchange(this.words, this.threadWord(threadIndex, THREAD_REQUIRED), 0);
    Atomics.sub(this.words, REQUIRED, required);
    Atomics.store(this.words, this.threadWord(threadIndex, THREAD_CAPACITY), 0);
    let freed = 0;
    for (let index = 0; index < this.numberOfSegments; index++) {
      const cell = this.statesBase + index;
      for (;;) {
        const state = Atomics.load(this.words, cell);
        if (ownerOf(state) !== threadIndex) break;
        const loans = loansOf(state);
        if (loans === 0) {
          // Nobody borrows it, and its owner is gone: nothing can change it meanwhile.
          this.free(index);
          freed++;
          break;
        }
        // Freed by the borrower that returns the last loan; a loan returned meanwhile makes the
        // exchange fail, and the segment is looked at again.
        if (Atomics.compareExchange(this.words, cell, state, stateOf(ORPHAN, loans)) === state) {
          break;
        }
      }
    }
    this.bumpGeneration();
    return freed;
  }

  private threadWord(threadIndex: number, word: number): number {
    return this.threadsBase + threadIndex * THREAD_WORDS + word;
  }
}
