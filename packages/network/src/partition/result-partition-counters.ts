import type { ResultPartitionMetrics } from "@sluice/runtime-api";

/**
 * What a result partition counts as it writes (pipelined or sort-merge alike): bytes and buffers
 * out, and the time its producer waited for buffers. {@link metricsView} reads them live.
 */
export class ResultPartitionCounters {
  numBytesOut = 0;
  numBuffersOut = 0;
  /** Back-pressured time of the waits that ended. */
  backPressuredTimeMs = 0;
  /** When the current wait began (`Date.now()`), or -1 while the producer is not waiting. */
  backPressureStart = -1;

  /** The partition's metrics over these counters, with `outPoolUsage` from the partition. */
  metricsView(outPoolUsage: () => number): ResultPartitionMetrics {
    const counters = this;
    return {
      get numBytesOut() {
        return counters.numBytesOut;
      },
      get numBuffersOut() {
        return counters.numBuffersOut;
      },
      get backPressuredTimeMs() {
        const running =
          counters.backPressureStart >= 0 ? Date.now() - counters.backPressureStart : 0;
        return counters.backPressuredTimeMs + running;
      },
      outPoolUsage,
    };
  }
}
