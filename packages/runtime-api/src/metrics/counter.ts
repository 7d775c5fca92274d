/**
 * A metric that counts (Flink's `Counter`): records, bytes, buffers. Reporters read it with
 * {@link Counter.getCount}; whoever owns it counts (the runtime's `SimpleCounter`, or a plugin's
 * own field read through `ShuffleMetricSink.registerCounter`).
 */
export interface Counter {
  /** Tells reporters which kind of metric this is. */
  readonly metricType: "counter";
  /** The current count. Cheap, never throws. */
  getCount(): number;
}
