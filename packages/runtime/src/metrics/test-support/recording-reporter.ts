import type { Metric, MetricGroup, MetricReporter } from "@sluice/runtime-api";

/** A metric as a reporter was told about it. */
export interface ReportedMetric {
  readonly metric: Metric;
  readonly name: string;
  readonly group: MetricGroup;
}

/** A reporter that records what it is told, for the metric system's tests. */
export class RecordingReporter implements MetricReporter {
  readonly added: ReportedMetric[] = [];
  readonly removed: ReportedMetric[] = [];
  reports = 0;
  closed = 0;

  notifyOfAddedMetric(metric: Metric, name: string, group: MetricGroup): void {
    this.added.push({ metric, name, group });
  }

  notifyOfRemovedMetric(metric: Metric, name: string, group: MetricGroup): void {
    this.removed.push({ metric, name, group });
  }

  report(): void {
    this.reports++;
  }

  close(): void {
    this.closed++;
  }

  /** The identifiers of the metrics added and not removed. */
  live(): string[] {
    const removed = new Set(this.removed.map((r) => r.metric));
    return this.added
      .filter((r) => !removed.has(r.metric))
      .map((r) => r.group.getMetricIdentifier(r.name));
  }
}
