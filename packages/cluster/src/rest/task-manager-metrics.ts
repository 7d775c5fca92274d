import type { RemoteMetricDump } from "../metric-query.js";

/** One entry of `GET /taskmanagers/:taskmanagerid/metrics` (Flink's `Metric`). */
export interface TaskManagerMetric {
  /** Its id within the task manager: `Status.Shuffle.Netty.AvailableMemorySegments`. */
  readonly id: string;
  /** Its value as Flink writes it, a string; absent when only the ids were asked for. */
  readonly value?: string;
}

/**
 * The task manager's own metrics in a metric query's answer (Flink's task manager metrics of its
 * `MetricStore`), by id: the name after the `taskmanager` scope (`Status.Shuffle.Netty.TotalMemory`),
 * leaving out those of its jobs and tasks. A gauge without a value yet is `null`.
 */
export function taskManagerMetricsOf(
  dumps: readonly RemoteMetricDump[],
): Map<string, number | null> {
  const metrics = new Map<string, number | null>();
  for (const dump of dumps) {
    const [scope, group, ...rest] = dump.logicalScope.split(".");
    if (scope !== "taskmanager" || group === "job") continue;
    const id = [...(group === undefined ? [] : [group]), ...rest, dump.name].join(".");
    metrics.set(id, dump.value);
  }
  return metrics;
}

/**
 * The body of `GET /taskmanagers/:taskmanagerid/metrics` (Flink's `TaskManagerMetricsHandler`):
 * without `get`, the ids of every metric; with `get=a,b`, those of them the task manager has,
 * each with its value.
 */
export function taskManagerMetricsBody(
  metrics: ReadonlyMap<string, number | null>,
  get: string | null,
): TaskManagerMetric[] {
  if (get === null) return [...metrics.keys()].sort().map((id) => ({ id }));
  return get
    .split(",")
    .map((id) => id.trim())
    .filter((id) => metrics.has(id))
    .map((id) => ({ id, value: String(metrics.get(id) ?? "NaN") }));
}
