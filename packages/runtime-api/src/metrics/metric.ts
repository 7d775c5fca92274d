import type { Counter } from "./counter.js";
import type { Gauge } from "./gauge.js";
import type { Meter } from "./meter.js";

/** Every kind of metric Sluice reports; reporters switch on `metricType` (Flink's `MetricType`). */
export type Metric = Counter | Gauge | Meter;

/** The kinds of metric: `counter`, `gauge` or `meter`. */
export type MetricType = Metric["metricType"];
