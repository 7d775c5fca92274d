import type { Metric } from "./metric.js";
import type { MetricGroup } from "./metric-group.js";

/**
 * Exports metrics to an external system (Flink's `MetricReporter`): a Prometheus endpoint, a log,
 * a push gateway. Created by a {@link MetricReporterFactory} that `metrics.reporter.<name>.factory.class`
 * names; one instance per reporter name and process (task manager or job manager).
 *
 * Lifecycle: `open()` once (bind ports, connect), then any number of
 * `notifyOfAddedMetric`/`notifyOfRemovedMetric` calls as groups come and go (a task's metrics are
 * removed when the task ends), then `close()` once when the process shuts down. All calls come
 * from the event loop; none of them may block it.
 */
export interface MetricReporter {
  /**
   * Acquires the reporter's resources (e.g. binds its HTTP port). Called once, before any metric
   * is added. A rejection fails the start of the process with the reporter's error.
   */
  open?(): Promise<void> | void;

  /**
   * A metric was registered in `group` under `metricName` (the name within the group, e.g.
   * `numRecordsIn` or `inPoolUsage`). The reporter keeps `metric` and reads it when it reports.
   * Must not throw; the runtime reports a thrown error as a warning and keeps running.
   */
  notifyOfAddedMetric(metric: Metric, metricName: string, group: MetricGroup): void;

  /** A metric of `group` was removed (its group was closed); the reporter forgets it. */
  notifyOfRemovedMetric(metric: Metric, metricName: string, group: MetricGroup): void;

  /**
   * Pushes the current values (Flink's `Scheduled.report`). Only for push-based reporters: when
   * present, the runtime calls it every `metrics.reporter.<name>.interval`.
   */
  report?(): void;

  /** Releases everything `open()` acquired (closes sockets). Called once; idempotent. */
  close(): Promise<void> | void;

  /**
   * Where a pull-based reporter serves, once open (e.g. `http://10.0.0.2:9250/metrics`): the
   * processes announce it (a task manager to its job manager at registration) so that an
   * operator or a client can find every endpoint of a cluster. Absent for push-based reporters.
   */
  readonly url?: string | undefined;
}
