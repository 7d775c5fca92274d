import type { Counter } from "./counter.js";
import type { Gauge } from "./gauge.js";
import type { Meter } from "./meter.js";

/** Every kind of metric Sluice reports; reporters switch on `metricType` (Flink's `MetricType`). */
export type Metric = Counter | Gauge | Meter;

/** The kinds of metric: `counter`, `gauge` or `meter`. */
export type MetricType = Metric["metricType"];

/**
 * The number a metric stands for now, as reporters and metric dumps show it: a counter's count, a
 * gauge's value, a meter's rate (events per second).
 */
export function currentValueOf(metric: Metric): number {
  switch (metric.metricType) {
    case "counter":
      return metric.getCount();
    case "gauge":
      return metric.getValue();
    case "meter":
      return metric.getRate();
  }
}
