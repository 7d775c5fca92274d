import { IllegalArgumentError } from "@sluice/core";
import type { ShuffleMetricSink } from "@sluice/runtime-api";
import type { AbstractMetricGroup } from "./groups/abstract-metric-group.js";
import { MeterView } from "./meter-view.js";

/**
 * The {@link ShuffleMetricSink} the runtime hands a shuffle plugin: it registers into a metric
 * group (the task manager's for the environment, a task's for its writers and gates), turning the
 * dots of a name into subgroups, so `Shuffle.Netty.Output.Buffers.outPoolUsage` lands where
 * Flink's reporters expect it.
 */
export class GroupMetricSink implements ShuffleMetricSink {
  /** The group names are registered under. */
  readonly group: AbstractMetricGroup;

  constructor(group: AbstractMetricGroup) {
    this.group = group;
  }

  /** Registers a gauge that reads `read` under the subgroups the dots of `name` name. */
  registerGauge(name: string, read: () => number): void {
    const [group, metricName] = this.resolve(name);
    group.gauge(metricName, read);
  }

  /** Registers a counter whose count `read` returns. */
  registerCounter(name: string, read: () => number): void {
    const [group, metricName] = this.resolve(name);
    group.counter(metricName, { metricType: "counter", getCount: read });
  }

  /** Registers a `MeterView` over the count `read` returns (60 s window). */
  registerMeter(name: string, read: () => number): void {
    const [group, metricName] = this.resolve(name);
    group.meter(metricName, new MeterView(read));
  }

  private resolve(name: string): [AbstractMetricGroup, string] {
    const parts = name.split(".");
    if (parts.some((part) => part === "")) {
      throw new IllegalArgumentError(
        `metric name ${JSON.stringify(name)} has an empty component; expected dot-separated names such as "Shuffle.Netty.Input.Buffers.inPoolUsage"`,
      );
    }
    const metricName = parts.pop() as string;
    let group = this.group;
    for (const part of parts) group = group.addGroup(part);
    return [group, metricName];
  }
}
