import { IllegalArgumentError } from "@sluice/core";

/** The settings of a {@link BufferDebloater} (Flink's `buffer-debloat.*` keys). */
export interface BufferDebloaterOptions {
  /** `taskmanager.network.memory.buffer-debloat.target`: ms the in-flight data should last. */
  readonly targetMillis: number;
  /** `taskmanager.memory.segment-size`: the largest (and first) buffer size. */
  readonly maxBufferSize: number;
  /** `taskmanager.memory.min-segment-size`: the smallest buffer size ever announced. */
  readonly minBufferSize: number;
  /** `taskmanager.network.memory.buffer-debloat.threshold-percentages`. */
  readonly thresholdPercentages: number;
  /** `taskmanager.network.memory.buffer-debloat.samples`: the moving average's window. */
  readonly numberOfSamples: number;
}

/**
 * Decides the buffer size a gate asks its producers for (Flink's BufferDebloater): the size at
 * which the buffers in use hold what the task consumes in `target` at the measured throughput.
 *
 * The raw size (throughput × target ÷ buffers in use) is smoothed by an exponential moving
 * average with α = 2 / (samples + 1), starting from the maximum size, and kept within
 * [min, max]. Before averaging, the raw size is capped at twice the current size (Flink's
 * `BufferSizeEMA`): a raw size far above the maximum would otherwise jump from the minimum to the
 * maximum in one step, while shrinking (towards 0 at worst) halves the size at most per step;
 * with the cap both go at the same speed. A new size is announced only when it differs from the
 * last announced one by at least `threshold-percentages` of it, or when it reaches the minimum or
 * the maximum: small changes are not worth the NewBufferSize messages.
 */
export class BufferDebloater {
  readonly targetMillis: number;
  readonly maxBufferSize: number;
  readonly minBufferSize: number;
  private readonly thresholdFactor: number;
  private readonly alpha: number;
  /** The moving average. */
  private averageSize: number;
  /** The size last returned for announcing. */
  private lastBufferSize: number;
  private lastEstimatedTimeToConsumeMillis = 0;

  constructor(options: BufferDebloaterOptions) {
    const { targetMillis, maxBufferSize, minBufferSize, thresholdPercentages, numberOfSamples } =
      options;
    check(Number.isFinite(targetMillis) && targetMillis > 0, "target", targetMillis, "> 0 ms");
    check(Number.isInteger(minBufferSize) && minBufferSize > 0, "min size", minBufferSize, "> 0");
    check(
      Number.isInteger(maxBufferSize) && maxBufferSize >= minBufferSize,
      "max size",
      maxBufferSize,
      `>= the min size ${minBufferSize}`,
    );
    check(
      thresholdPercentages >= 0 && thresholdPercentages <= 100,
      "threshold-percentages",
      thresholdPercentages,
      "in [0, 100]",
    );
    check(
      Number.isInteger(numberOfSamples) && numberOfSamples >= 1,
      "samples",
      numberOfSamples,
      ">= 1",
    );
    this.targetMillis = targetMillis;
    this.maxBufferSize = maxBufferSize;
    this.minBufferSize = minBufferSize;
    this.thresholdFactor = thresholdPercentages / 100;
    this.alpha = 2 / (numberOfSamples + 1);
    this.averageSize = maxBufferSize;
    this.lastBufferSize = maxBufferSize;
  }

  /**
   * The size to announce for `throughput` (bytes/s) with `buffersInUse` buffers holding data,
   * or `undefined` when the change is below the threshold.
   */
  recalculateBufferSize(throughput: number, buffersInUse: number): number | undefined {
    const buffers = Math.max(1, buffersInUse);
    const desiredTotalBytes = (Math.max(0, throughput) * this.targetMillis) / 1000;
    const desiredSize = Math.min(desiredTotalBytes / buffers, 2 * this.averageSize);
    this.averageSize += this.alpha * (desiredSize - this.averageSize);
    this.averageSize = Math.min(this.maxBufferSize, Math.max(this.minBufferSize, this.averageSize));
    const newSize = Math.round(this.averageSize);
    this.lastEstimatedTimeToConsumeMillis =
      (newSize * buffers * 1000) / Math.max(1, Math.max(0, throughput));
    if (this.skipUpdate(newSize)) return undefined;
    this.lastBufferSize = newSize;
    return newSize;
  }

  /** The size last returned by {@link recalculateBufferSize} (the maximum before any). */
  getLastBufferSize(): number {
    return this.lastBufferSize;
  }

  /** How long the buffers in use would take to consume at the last size and throughput. */
  getLastEstimatedTimeToConsumeMillis(): number {
    return this.lastEstimatedTimeToConsumeMillis;
  }

  private skipUpdate(newSize: number): boolean {
    if (newSize === this.lastBufferSize) return true;
    // The bounds are always announced: staying a little above the minimum forever would waste
    // the point of debloating, and a little below the maximum would cap throughput.
    if (newSize <= this.minBufferSize || newSize >= this.maxBufferSize) return false;
    return Math.abs(newSize - this.lastBufferSize) < this.lastBufferSize * this.thresholdFactor;
  }
}

function check(ok: boolean, what: string, value: number, expected: string): void {
  if (!ok) {
    throw new IllegalArgumentError(`buffer debloating: ${what} must be ${expected}, got ${value}`);
  }
}
