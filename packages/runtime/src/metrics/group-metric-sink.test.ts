import { ErrorCodes } from "@sluice/core";
import { describe, expect, it } from "vitest";
import { GroupMetricSink } from "./group-metric-sink.js";
import { TaskManagerMetricGroup } from "./groups/task-manager-metric-group.js";
import { MeterView } from "./meter-view.js";
import { MetricRegistry } from "./metric-registry.js";

describe("GroupMetricSink", () => {
  it("registers a plugin's gauges, counters and meters in subgroups named by the dots", async () => {
    const registry = new MetricRegistry({ updateViewsAutomatically: false });
    const tm = new TaskManagerMetricGroup(registry, "host-1", "tm-1");
    const sink = new GroupMetricSink(tm);
    let bytes = 0;
    sink.registerGauge("Status.Shuffle.Netty.UsedMemorySegments", () => 7);
    sink.registerCounter("numBytesOut", () => bytes);
    sink.registerMeter("numBytesOutPerSecond", () => bytes);
    const netty = tm.addGroup("Status").addGroup("Shuffle").addGroup("Netty");
    const gauge = netty.getMetrics().get("UsedMemorySegments");
    expect(gauge?.metricType).toBe("gauge");
    expect(netty.getLogicalScope()).toBe("taskmanager.Status.Shuffle.Netty");
    const counter = tm.getMetrics().get("numBytesOut");
    const meter = tm.getMetrics().get("numBytesOutPerSecond");
    expect(counter?.metricType).toBe("counter");
    expect(meter).toBeInstanceOf(MeterView);
    bytes = 5_000;
    registry.viewUpdater.update();
    expect(counter?.metricType === "counter" && counter.getCount()).toBe(5_000);
    expect(meter?.metricType === "meter" && meter.getRate()).toBe(5_000 / 60);
    expect(registry.dump().find((d) => d.name === "UsedMemorySegments")?.value).toBe(7);
    await registry.close();
  });

  it("rejects a name with an empty component", async () => {
    const registry = new MetricRegistry({ updateViewsAutomatically: false });
    const sink = new GroupMetricSink(new TaskManagerMetricGroup(registry, "h", "tm"));
    expect(() => sink.registerGauge("Shuffle..x", () => 0)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }),
    );
    await registry.close();
  });
});
