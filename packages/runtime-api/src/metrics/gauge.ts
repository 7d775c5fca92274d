/**
 * A metric whose value is read when it is reported (Flink's `Gauge`): pool usage, queue length,
 * time per second. Booleans are reported as 1 and 0.
 */
export interface Gauge {
  /** Tells reporters which kind of metric this is. */
  readonly metricType: "gauge";
  /** The current value. Cheap, never throws; `NaN` when there is no value yet. */
  getValue(): number;
}
