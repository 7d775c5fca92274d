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

/**
 * A turn of the event loop that took longer than this (ms) ran other work than the doorbell's
 * look: the thread is busy and looks again next turn instead of waiting to be woken. A turn
 * with nothing else to run takes a few microseconds.
 */
const BUSY_TURN_MS = 0.05;

/**
 * A waiting thread looks for rings at least this often (ms) even when nobody wakes it. The ring
 * protocol loses no wake-up that a test of it has found, but a lost one would stall a channel for
 * good; this bounds what one would cost, and a waiting thread's look costs microseconds.
 */
const DEFAULT_RECHECK_MS = 100;

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
 * also does I/O must keep its event loop running. Waking a thread that waits costs the ringing
 * thread `Atomics.notify` (measured at 20-35 µs on a loaded 2-core machine, the woken thread
 * preempting the ringer included), so a thread waits only when it is idle: after a turn of its
 * event loop in which no endpoint was rung and none of its endpoints did work
 * ({@link markActive}). While it is busy, it looks for rings once per turn (`setImmediate`), and
 * other threads ring it without `Atomics.notify`. Endpoints also ring only when the other side
 * asked to be rung (see `SharedSubpartitionQueue`). A handler that throws is a bug in its
 * endpoint: the error is rethrown outside the dispatch, as an uncaught exception of the thread.
 */
export class ThreadDoorbell {
  /** This thread's index in the signals. */
  readonly threadIndex: number;
  private readonly words: Int32Array;
  private readonly maxThreads: number;
  private readonly handlers: ((() => void) | undefined)[] = [];
  /** Endpoint ids given back, reused first. */
  private readonly freeIds: number[] = [];
  private registered = 0;
  /** When the pending look was scheduled: the turn since took that long. */
  private pollScheduledAt = 0;
  /** A look for rings is scheduled for the next turn. */
  private polling = false;
  /** An `Atomics.waitAsync` is pending (at most one: it is reused until it is woken). */
  private parked = false;
  /** An endpoint did work since the last look: look again next turn instead of waiting. */
  private active = false;
  private closed = false;
  private readonly recheckMs: number;

  /**
   * @param signals - the doorbells of every thread ({@link createSignals}), shared.
   * @param threadIndex - this thread's index, below the `maxThreads` the signals were made for.
   * @param options.recheckMs - how often a waiting thread looks for rings unwoken (default
   *   100 ms; `Infinity` only to test that no wake-up is lost).
   */
  constructor(
    signals: SharedArrayBuffer,
    threadIndex: number,
    options: { readonly recheckMs?: number } = {},
  ) {
    this.recheckMs = options.recheckMs ?? DEFAULT_RECHECK_MS;
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
   * Rings endpoint `endpoint` of thread `threadIndex` (this thread's own too): sets the endpoint's
   * bit, and wakes the thread at once when it waits, so it works while this one goes on (a
   * consumer woken by its first buffer reads it while the producer writes the next). Only the
   * first ring that finds the thread waiting wakes it: it clears the flag, and the others find
   * their bits when the woken thread looks.
   */
  ring(threadIndex: number, endpoint: number): void {
    const words = this.words;
    const base = threadIndex * THREAD_WORDS;
    const word = endpoint >>> 5;
    Atomics.or(words, base + HEADER_WORDS + SUMMARY_WORDS + word, 1 << (endpoint & 31));
    Atomics.or(words, base + HEADER_WORDS + (word >>> 5), 1 << (word & 31));
    // After the bits: a thread that parks after this add sees the bits or a changed doorbell.
    Atomics.add(words, base + DOORBELL, 1);
    if (
      Atomics.load(words, base + WAITING) !== 0 &&
      Atomics.compareExchange(words, base + WAITING, 1, 0) === 1
    ) {
      Atomics.notify(words, base + DOORBELL);
    }
  }

  /** Stops dispatching: handlers are no longer called. Idempotent. */
  close(): void {
    this.closed = true;
  }

  /**
   * An endpoint of this thread did work outside a dispatch (pushed or took records, returned a
   * buffer): the thread is busy, so other threads' rings need not wake it; it looks for them
   * next turn. Cheap enough to call per buffer.
   */
  markActive(): void {
    this.active = true;
    if (this.polling || this.closed || this.registered === 0) return;
    Atomics.store(this.words, this.threadIndex * THREAD_WORDS + WAITING, 0);
    this.schedulePoll();
  }

  private start(): void {
    if (this.closed || this.polling) return;
    this.schedulePoll();
  }

  private schedulePoll(): void {
    this.polling = true;
    this.pollScheduledAt = performance.now();
    setImmediate(this.poll);
  }

  /**
   * Once per turn while the thread is busy: dispatches what was rung; after a turn without rings
   * or work, waits until it is rung.
   */
  private readonly poll = (): void => {
    this.polling = false;
    if (this.closed || this.registered === 0) return;
    const dispatched = this.dispatch();
    // A turn that ran other callbacks for long means a busy thread, which needs no wake-up.
    const busy = performance.now() - this.pollScheduledAt > BUSY_TURN_MS;
    if (dispatched || this.active || busy) {
      this.active = false;
      // Others' turns (timers, sockets, the tasks) between two rounds.
      this.schedulePoll();
      return;
    }
    this.park();
  };

  /** Waits (without blocking) until another thread rings; looks again at once if one just did. */
  private park(): void {
    const words = this.words;
    const base = this.threadIndex * THREAD_WORDS;
    Atomics.store(words, base + WAITING, 1);
    // Read before looking at the bits: a ring after the look changed it, and the wait returns.
    const seen = Atomics.load(words, base + DOORBELL);
    // Rung between the last round and the flag: a ringer that saw no flag did not notify.
    if (this.anyRung()) {
      Atomics.store(words, base + WAITING, 0);
      this.schedulePoll();
      return;
    }
    // A wait still pending from an earlier park is woken by the next ring that sees the flag.
    if (this.parked) return;
    const wait = Atomics.waitAsync(words, base + DOORBELL, seen, this.recheckMs);
    if (!wait.async) {
      Atomics.store(words, base + WAITING, 0);
      this.schedulePoll();
      return;
    }
    this.parked = true;
    void wait.value.then(this.woken);
  }

  private readonly woken = (): void => {
    this.parked = false;
    Atomics.store(this.words, this.threadIndex * THREAD_WORDS + WAITING, 0);
    if (!this.polling) this.poll();
  };

  /** Summary words that can have a bit set: those of the endpoint ids handed out so far. */
  private summaryWordsInUse(): number {
    return Math.min(SUMMARY_WORDS, Math.ceil(this.handlers.length / 1024));
  }

  private anyRung(): boolean {
    const summary = this.threadIndex * THREAD_WORDS + HEADER_WORDS;
    const inUse = this.summaryWordsInUse();
    for (let i = 0; i < inUse; i++) {
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
    const inUse = this.summaryWordsInUse();
    for (let s = 0; s < inUse; s++) {
      // Most looks find nothing: a load takes no lock, an exchange does.
      if (Atomics.load(words, summary + s) === 0) continue;
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
