import { IllegalArgumentError, IllegalStateError, LimitExceededError } from "../errors.js";

/** Per thread: the doorbell word and the "waiting" flag, on a cache line of their own. */
const DOORBELL = 0;
const WAITING = 1;
const HEADER_WORDS = 16;
/** One bit per endpoint: 65,536 endpoints per thread. */
const BITMAP_WORDS = 2048;
/** One bit per bitmap word that has a bit set, so a wake-up scans 64 words, not 2,048. */
const SUMMARY_WORDS = BITMAP_WORDS / 32;
const THREAD_WORDS = HEADER_WORDS + SUMMARY_WORDS + BITMAP_WORDS;

/** The most endpoints one thread's doorbell serves at once. */
export const MAX_DOORBELL_ENDPOINTS = BITMAP_WORDS * 32;

/**
 * Wakes another thread of the same process for a reason it can tell apart: one doorbell per
 * thread in shared memory, and behind it one bit per *endpoint* (a channel end, a pool) the
 * thread registered. {@link ring} sets the endpoint's bit and, only when the thread waits, wakes
 * it with `Atomics.notify`; the thread then calls the handler of every endpoint whose bit was
 * set, once, however often it was rung meanwhile.
 *
 * The thread waits with `Atomics.waitAsync`, never with the blocking `Atomics.wait`: a thread that
 * also does I/O must keep its event loop running. While endpoints keep being rung it dispatches
 * them once per turn of its event loop (`setImmediate`), so timers and sockets get their turns
 * in between. Waking a thread that waits costs the ringing thread a system call (measured at
 * 10-20 µs on a loaded 2-core machine): endpoints ring only when the other side asked to be
 * rung (see `SharedSubpartitionQueue`). A handler that throws is a bug in its endpoint: the error is rethrown outside the
 * dispatch, as an uncaught exception of the thread.
 */
export class ThreadDoorbell {
  /** This thread's index in the signals. */
  readonly threadIndex: number;
  private readonly words: Int32Array;
  private readonly maxThreads: number;
  private readonly handlers: ((() => void) | undefined)[] = [];
  /** Threads whose doorbell rings at the end of this turn. */
  private readonly toWake = new Set<number>();
  /** Endpoint ids given back, reused first. */
  private readonly freeIds: number[] = [];
  private registered = 0;
  private running = false;
  private closed = false;

  /**
   * @param signals - the doorbells of every thread ({@link createSignals}), shared.
   * @param threadIndex - this thread's index, below the `maxThreads` the signals were made for.
   */
  constructor(signals: SharedArrayBuffer, threadIndex: number) {
    this.words = new Int32Array(signals);
    this.maxThreads = this.words.length / THREAD_WORDS;
    if (!Number.isInteger(threadIndex) || threadIndex < 0 || threadIndex >= this.maxThreads) {
      throw new IllegalArgumentError(
        `thread index ${threadIndex} out of [0, ${this.maxThreads}) of the doorbell signals`,
      );
    }
    this.threadIndex = threadIndex;
  }

  /** Shared memory for the doorbells of `maxThreads` threads. */
  static createSignals(maxThreads: number): SharedArrayBuffer {
    if (!Number.isInteger(maxThreads) || maxThreads < 1) {
      throw new IllegalArgumentError(
        `doorbell threads must be a positive integer, got ${maxThreads}`,
      );
    }
    return new SharedArrayBuffer(maxThreads * THREAD_WORDS * 4);
  }

  /**
   * Registers `handler`, called on this thread after its endpoint was rung; returns the
   * endpoint id other threads ring.
   *
   * @throws LimitExceededError when this thread already has {@link MAX_DOORBELL_ENDPOINTS}.
   */
  register(handler: () => void): number {
    if (this.closed)
      throw new IllegalStateError(`the doorbell of thread ${this.threadIndex} is closed`);
    const id = this.freeIds.pop() ?? this.handlers.length;
    if (id >= MAX_DOORBELL_ENDPOINTS) {
      throw new LimitExceededError(
        `thread ${this.threadIndex} has ${MAX_DOORBELL_ENDPOINTS} channel ends already: no more cross-thread channels fit`,
      );
    }
    this.handlers[id] = handler;
    this.registered++;
    this.start();
    return id;
  }

  /** Unregisters endpoint `id`; a later ring of it is ignored (or reaches its next user, who looks and finds nothing). */
  unregister(id: number): void {
    if (this.handlers[id] === undefined) return;
    this.handlers[id] = undefined;
    this.freeIds.push(id);
    this.registered--;
  }

  /**
   * Rings endpoint `endpoint` of thread `threadIndex` (this thread's own too). The endpoint's bit
   * is set at once; the doorbell itself rings once this turn's synchronous code is done, once per
   * thread however many of its endpoints were rung: a wake-up costs a system call, and a consumer
   * that recycles a buffer after each record batch would otherwise pay one per buffer.
   */
  ring(threadIndex: number, endpoint: number): void {
    const words = this.words;
    const base = threadIndex * THREAD_WORDS;
    const word = endpoint >>> 5;
    Atomics.or(words, base + HEADER_WORDS + SUMMARY_WORDS + word, 1 << (endpoint & 31));
    Atomics.or(words, base + HEADER_WORDS + (word >>> 5), 1 << (word & 31));
    if (this.toWake.has(threadIndex)) return;
    this.toWake.add(threadIndex);
    if (this.toWake.size === 1) queueMicrotask(this.wake);
  }

  /** Rings the doorbell of every thread rung since the last time. */
  private readonly wake = (): void => {
    const words = this.words;
    for (const threadIndex of this.toWake) {
      const base = threadIndex * THREAD_WORDS;
      Atomics.add(words, base + DOORBELL, 1);
      if (Atomics.load(words, base + WAITING) !== 0) Atomics.notify(words, base + DOORBELL);
    }
    this.toWake.clear();
  };

  /** Stops dispatching: handlers are no longer called. Idempotent. */
  close(): void {
    this.closed = true;
  }

  private start(): void {
    if (this.running || this.closed) return;
    this.running = true;
    void this.run();
  }

  /** Dispatches while endpoints are registered; waits (without blocking) while none was rung. */
  private async run(): Promise<void> {
    const words = this.words;
    const base = this.threadIndex * THREAD_WORDS;
    try {
      while (!this.closed && this.registered > 0) {
        if (this.dispatch()) {
          // Others' turns (timers, sockets, the tasks) between two rounds.
          await new Promise((resolve) => setImmediate(resolve));
          continue;
        }
        Atomics.store(words, base + WAITING, 1);
        const seen = Atomics.load(words, base + DOORBELL);
        // Rung between the last round and the flag: dispatch instead of waiting.
        if (this.anyRung()) {
          Atomics.store(words, base + WAITING, 0);
          continue;
        }
        const wait = Atomics.waitAsync(words, base + DOORBELL, seen);
        if (wait.async) await wait.value;
        Atomics.store(words, base + WAITING, 0);
      }
    } finally {
      this.running = false;
    }
  }

  private anyRung(): boolean {
    const summary = this.threadIndex * THREAD_WORDS + HEADER_WORDS;
    for (let i = 0; i < SUMMARY_WORDS; i++) {
      if (Atomics.load(this.words, summary + i) !== 0) return true;
    }
    return false;
  }

  /** Calls the handler of every endpoint rung since the last round; false when none was. */
  private dispatch(): boolean {
    const words = this.words;
    const summary = this.threadIndex * THREAD_WORDS + HEADER_WORDS;
    const bitmap = summary + SUMMARY_WORDS;
    let dispatched = false;
    for (let s = 0; s < SUMMARY_WORDS; s++) {
      let summaryBits = Atomics.exchange(words, summary + s, 0);
      while (summaryBits !== 0) {
        const low = summaryBits & -summaryBits;
        summaryBits ^= low;
        const word = s * 32 + (31 - Math.clz32(low));
        let bits = Atomics.exchange(words, bitmap + word, 0);
        while (bits !== 0) {
          const bit = bits & -bits;
          bits ^= bit;
          const handler = this.handlers[word * 32 + (31 - Math.clz32(bit))];
          if (handler === undefined) continue;
          dispatched = true;
          try {
            handler();
          } catch (error) {
            setImmediate(() => {
              throw error;
            });
          }
        }
      }
    }
    return dispatched;
  }
}
