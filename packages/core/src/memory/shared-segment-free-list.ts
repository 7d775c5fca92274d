import { IllegalArgumentError } from "../errors.js";

/** Int32 words before the cells: the enqueue and dequeue positions, each on its own cache line. */
const HEADER_WORDS = 32;
const ENQUEUE_POSITION = 0;
const DEQUEUE_POSITION = 16;
/** Each cell is a sequence word and a value word. */
const CELL_WORDS = 2;

/** The smallest power of two that is at least `n` (and at least 2). */
function capacityFor(n: number): number {
  let capacity = 2;
  while (capacity < n) capacity *= 2;
  return capacity;
}

/**
 * A bounded multi-producer multi-consumer queue of non-negative int32 values in shared memory
 * (Dmitry Vyukov's bounded MPMC queue): the free list of the segments every thread of a task
 * manager draws from. Any thread may offer and poll at the same time; neither ever blocks or
 * takes a lock. Each cell carries a sequence number that says whether it is ready to be written
 * or read at the current position, so a stale position loses its compare-and-swap instead of
 * reading a value twice (no ABA problem). Positions are int32 and wrap; every comparison is of a
 * wrapped difference, which stays far inside the int32 range because it never exceeds the
 * capacity.
 *
 * A poll may report "empty" while an offer that already claimed the head cell has not yet
 * published its value; the value is then there on the next poll. Callers count free values
 * themselves (see `SharedNetworkMemory`) and are woken by the offering side.
 */
export class SharedSegmentFreeList {
  /** Values the queue can hold at once (a power of two). */
  readonly capacity: number;
  private readonly mask: number;
  private readonly words: Int32Array;
  private readonly base: number;

  private constructor(words: Int32Array, base: number, capacity: number) {
    this.words = words;
    this.base = base;
    this.capacity = capacity;
    this.mask = capacity - 1;
  }

  /** Int32 words a free list that holds up to `count` values needs. */
  static wordsFor(count: number): number {
    return HEADER_WORDS + CELL_WORDS * capacityFor(count);
  }

  /**
   * Lays out an empty free list for up to `count` values at word `base` of `words` (memory that
   * is not yet visible to another thread), and returns a handle on it.
   */
  static initialize(words: Int32Array, base: number, count: number): SharedSegmentFreeList {
    if (!Number.isInteger(count) || count < 0) {
      throw new IllegalArgumentError(`free list size must be a non-negative integer, got ${count}`);
    }
    const capacity = capacityFor(count);
    if (base + HEADER_WORDS + CELL_WORDS * capacity > words.length) {
      throw new IllegalArgumentError(
        `a free list of ${count} values needs ${SharedSegmentFreeList.wordsFor(count)} words at word ${base}, but only ${words.length - base} are there`,
      );
    }
    Atomics.store(words, base + ENQUEUE_POSITION, 0);
    Atomics.store(words, base + DEQUEUE_POSITION, 0);
    for (let i = 0; i < capacity; i++) {
      Atomics.store(words, base + HEADER_WORDS + i * CELL_WORDS, i);
      Atomics.store(words, base + HEADER_WORDS + i * CELL_WORDS + 1, -1);
    }
    return new SharedSegmentFreeList(words, base, capacity);
  }

  /** A handle on a free list another thread laid out for up to `count` values at word `base`. */
  static attach(words: Int32Array, base: number, count: number): SharedSegmentFreeList {
    return new SharedSegmentFreeList(words, base, capacityFor(count));
  }

  /** Adds `value` (>= 0); false when the queue is full (a caller that gives back more than it took). */
  offer(value: number): boolean {
    const words = this.words;
    const enqueue = this.base + ENQUEUE_POSITION;
    let position = Atomics.load(words, enqueue);
    for (;;) {
      const cell = this.cellOf(position);
      const difference = (Atomics.load(words, cell) - position) | 0;
      if (difference === 0) {
        if (Atomics.compareExchange(words, enqueue, position, (position + 1) | 0) === position) {
          Atomics.store(words, cell + 1, value);
          // Publishing the next sequence makes the value readable at this position.
          Atomics.store(words, cell, (position + 1) | 0);
          return true;
        }
        position = Atomics.load(words, enqueue);
      } else if (difference < 0) {
        return false;
      } else {
        position = Atomics.load(words, enqueue);
      }
    }
  }

  /** Takes a value, or returns -1 when none is published right now. */
  poll(): number {
    const words = this.words;
    const dequeue = this.base + DEQUEUE_POSITION;
    let position = Atomics.load(words, dequeue);
    for (;;) {
      const cell = this.cellOf(position);
      const difference = (Atomics.load(words, cell) - ((position + 1) | 0)) | 0;
      if (difference === 0) {
        if (Atomics.compareExchange(words, dequeue, position, (position + 1) | 0) === position) {
          const value = Atomics.load(words, cell + 1);
          // The cell is free again one lap later.
          Atomics.store(words, cell, (position + this.capacity) | 0);
          return value;
        }
        position = Atomics.load(words, dequeue);
      } else if (difference < 0) {
        return -1;
      } else {
        position = Atomics.load(words, dequeue);
      }
    }
  }

  private cellOf(position: number): number {
    return this.base + HEADER_WORDS + (position & this.mask) * CELL_WORDS;
  }
}
