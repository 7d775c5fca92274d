/** Milliseconds of some monotonic clock; injectable so tests control time. */
export type MillisClock = () => number;

/**
 * Measures how fast a gate's task consumes data, for buffer debloating (Flink's
 * ThroughputCalculator): the bytes of data buffers handed to the task over the time the gate had
 * data. Time while the gate was empty is left out, since an idle task says nothing about how
 * fast it could consume; the measurement pauses when the gate runs dry and resumes when data
 * arrives.
 */
export class ThroughputCalculator {
  private readonly clock: MillisClock;
  private accumulatedBytes = 0;
  private measuredMillis = 0;
  /** When the running measurement started; undefined while paused. */
  private startMillis: number | undefined;
  private lastThroughput = 0;

  constructor(clock: MillisClock = () => performance.now()) {
    this.clock = clock;
  }

  /** `bytes` of data were handed to the task. Resumes a paused measurement. */
  incomingDataSize(bytes: number): void {
    this.startMillis ??= this.clock();
    this.accumulatedBytes += bytes;
  }

  /** The gate ran dry: the time until data arrives again does not count. */
  pauseMeasurement(): void {
    if (this.startMillis === undefined) return;
    this.measuredMillis += this.clock() - this.startMillis;
    this.startMillis = undefined;
  }

  /** Data arrived in an empty gate: time counts again. */
  resumeMeasurement(): void {
    this.startMillis ??= this.clock();
  }

  /**
   * Bytes per second since the last call, and starts a new period. A period without measured
   * time (the gate was empty throughout) repeats the last result.
   */
  calculateThroughput(): number {
    if (this.startMillis !== undefined) {
      const now = this.clock();
      this.measuredMillis += now - this.startMillis;
      this.startMillis = now;
    }
    if (this.measuredMillis > 0) {
      this.lastThroughput = Math.round((this.accumulatedBytes * 1000) / this.measuredMillis);
    }
    this.accumulatedBytes = 0;
    this.measuredMillis = 0;
    return this.lastThroughput;
  }

  /** The result of the last {@link calculateThroughput}, in bytes per second. */
  getLastThroughput(): number {
    return this.lastThroughput;
  }
}
