/** Ticks of the slow consumer's token bucket. */
export const THROTTLE_TICK_MS = 50;

/**
 * A token bucket for the slow consumer of case 5: `consumed(n)` spends bytes; when the budget
 * is spent, `pause()` is called, and `resume()` once a tick refilled it. Refills
 * `bytesPerSecond × tick` per tick, holding at most one tick's worth (no bursts after a stall).
 */
export class ByteThrottle {
  /** The throttle created last in this process (a child runs one consumer at a time). */
  static current: ByteThrottle | undefined;
  /** Bytes consumed so far, and when the throttle started. */
  totalBytes = 0;
  readonly startedAt = performance.now();
  private budget: number;
  private paused = false;
  private readonly timer: NodeJS.Timeout;
  private readonly perTick: number;

  constructor(
    bytesPerSecond: number,
    private readonly pause: () => void,
    private readonly resume: () => void,
  ) {
    this.perTick = (bytesPerSecond * THROTTLE_TICK_MS) / 1000;
    this.budget = this.perTick;
    ByteThrottle.current = this;
    this.timer = setInterval(() => {
      this.budget = Math.min(this.perTick, this.budget + this.perTick);
      if (this.paused && this.budget > 0) {
        this.paused = false;
        this.resume();
      }
    }, THROTTLE_TICK_MS);
  }

  /** Bytes that may still be read in this tick. */
  available(): number {
    return Math.max(0, this.budget);
  }

  consumed(bytes: number): void {
    this.totalBytes += bytes;
    this.budget -= bytes;
    if (!this.paused && this.budget <= 0) {
      this.paused = true;
      this.pause();
    }
  }

  /** Resolves at the next refill (for pull-based consumers). */
  nextTick(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, THROTTLE_TICK_MS));
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** What the current throttle let through: bytes and the achieved rate (for case 5's table). */
export function throttleStats(): { bytes: number; bytesPerSecond: number } | null {
  const t = ByteThrottle.current;
  if (t === undefined) return null;
  const seconds = (performance.now() - t.startedAt) / 1000;
  return { bytes: t.totalBytes, bytesPerSecond: seconds > 0 ? t.totalBytes / seconds : 0 };
}
