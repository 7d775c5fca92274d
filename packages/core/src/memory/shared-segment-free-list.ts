import { IllegalArgumentError } from "../errors.js";

/**
 * Int32 words before the links: the head (a 64-bit word) and padding, so that the head, which
 * every thread changes, has a cache line of its own.
 */
const HEADER_WORDS = 16;
const TOP_MASK = 0xffffffffn;

/**
 * A lock-free stack of the values 0 .. n − 1 in shared memory (R. K. Treiber's stack, with a
 * version tag against ABA): the free list of the segments every thread of a task manager draws
 * from. Any thread may push and pop at the same time; neither ever blocks, takes a lock or waits
 * for another thread to finish a step. The head is one 64-bit word, the top value + 1 in its low
 * 32 bits and a tag in its high 32 bits that every change increments: a thread that read the head,
 * was delayed while the same value was popped and pushed again, fails its compare-and-swap on the
 * tag instead of linking a stale successor (it would take 2^32 changes in the meantime for the
 * tag to come back). Each value's link is its own word, so no value is ever in the list twice
 * unless it is pushed twice (a double free, which the caller guards against).
 *
 * Last in, first out, as a single-threaded pool's array: the segments used most recently, warm in
 * the caches and already backed by memory pages, are handed out again first.
 */
export class SharedSegmentFreeList {
  /** Values the list can hold (0 .. capacity − 1). */
  readonly capacity: number;
  private readonly words: Int32Array;
  private readonly head: BigInt64Array;
  private readonly links: number;

  private constructor(words: Int32Array, base: number, capacity: number) {
    if ((words.byteOffset + base * 4) % 8 !== 0) {
      throw new IllegalArgumentError(
        `a free list's head must be 8-byte aligned, but it would be at byte ${words.byteOffset + base * 4}`,
      );
    }
    this.words = words;
    this.head = new BigInt64Array(words.buffer, words.byteOffset + base * 4, 1);
    this.links = base + HEADER_WORDS;
    this.capacity = capacity;
  }

  /** Int32 words a free list of up to `count` values needs. */
  static wordsFor(count: number): number {
    return HEADER_WORDS + count;
  }

  /**
   * Lays out an empty free list of the values 0 .. `count` − 1 at word `base` (even) of `words`
   * (memory not yet visible to another thread), and returns a handle on it.
   */
  static initialize(words: Int32Array, base: number, count: number): SharedSegmentFreeList {
    if (!Number.isInteger(count) || count < 0) {
      throw new IllegalArgumentError(`free list size must be a non-negative integer, got ${count}`);
    }
    if (base + SharedSegmentFreeList.wordsFor(count) > words.length) {
      throw new IllegalArgumentError(
        `a free list of ${count} values needs ${SharedSegmentFreeList.wordsFor(count)} words at word ${base}, but only ${words.length - base} are there`,
      );
    }
    const list = new SharedSegmentFreeList(words, base, count);
    Atomics.store(list.head, 0, 0n);
    return list;
  }

  /** A handle on a free list another thread laid out for `count` values at word `base`. */
  static attach(words: Int32Array, base: number, count: number): SharedSegmentFreeList {
    return new SharedSegmentFreeList(words, base, count);
  }

  /** Pushes `value` (in 0 .. capacity − 1); always succeeds. */
  offer(value: number): boolean {
    if (!(value >= 0 && value < this.capacity)) {
      throw new IllegalArgumentError(`value ${value} out of the free list's [0, ${this.capacity})`);
    }
    const head = this.head;
    for (;;) {
      const seen = Atomics.load(head, 0);
      const unsigned = BigInt.asUintN(64, seen);
      Atomics.store(this.words, this.links + value, Number(unsigned & TOP_MASK));
      const next = BigInt.asIntN(
        64,
        ((((unsigned >> 32n) + 1n) & TOP_MASK) << 32n) | BigInt(value + 1),
      );
      if (Atomics.compareExchange(head, 0, seen, next) === seen) return true;
    }
  }

  /** Pops the value pushed last, or returns -1 when the list is empty. */
  poll(): number {
    const head = this.head;
    for (;;) {
      const seen = Atomics.load(head, 0);
      const unsigned = BigInt.asUintN(64, seen);
      const top = Number(unsigned & TOP_MASK);
      if (top === 0) return -1;
      const link = Atomics.load(this.words, this.links + top - 1);
      const next = BigInt.asIntN(64, ((((unsigned >> 32n) + 1n) & TOP_MASK) << 32n) | BigInt(link));
      if (Atomics.compareExchange(head, 0, seen, next) === seen) return top - 1;
    }
  }
}
