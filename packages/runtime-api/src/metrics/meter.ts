/**
 * A metric that measures a rate (Flink's `Meter`): events per second averaged over a time window
 * (Flink's `MeterView`: 60 s, updated every 5 s), together with the count it is derived from.
 */
export interface Meter {
  /** Tells reporters which kind of metric this is. */
  readonly metricType: "meter";
  /** Events per second over the meter's window, as of its last update. */
  getRate(): number;
  /** The total count the rate is derived from. */
  getCount(): number;
}
