import type { MetricReporter } from "@sluice/runtime-api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TaskManagerMetricGroup } from "./groups/task-manager-metric-group.js";
import { MeterView } from "./meter-view.js";
import { MetricRegistry } from "./metric-registry.js";
import { SimpleCounter } from "./simple-counter.js";
import { RecordingReporter } from "./test-support/recording-reporter.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("MetricRegistry", () => {
  it("tells every reporter about added and removed metrics, also when another reporter throws", async () => {
    const good = new RecordingReporter();
    const throwing: MetricReporter = {
      notifyOfAddedMetric: () => {
        throw new Error("cannot add");
      },
      notifyOfRemovedMetric: () => {
        throw new Error("cannot remove");
      },
      close: () => {},
    };
    const registry = new MetricRegistry({
      reporters: [
        { name: "bad", reporter: throwing, intervalMs: 0 },
        { name: "good", reporter: good, intervalMs: 0 },
      ],
      updateViewsAutomatically: false,
    });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    try {
      const tm = new TaskManagerMetricGroup(registry, "h", "tm");
      tm.gauge("g", () => 1);
      tm.close();
      await new Promise((resolve) => setImmediate(resolve));
      expect(good.added.map((r) => r.name)).toEqual(["g"]);
      expect(good.removed.map((r) => r.name)).toEqual(["g"]);
      expect(warnings.some((w) => w.includes('"bad" failed to add h.taskmanager.tm.g'))).toBe(true);
      expect(warnings.some((w) => w.includes('"bad" failed to remove'))).toBe(true);
    } finally {
      process.off("warning", onWarning);
      await registry.close();
    }
  });

  it("updates meters every 5 seconds on its own timer, and stops when closed", async () => {
    vi.useFakeTimers();
    const registry = new MetricRegistry();
    const counter = new SimpleCounter();
    const meter = new TaskManagerMetricGroup(registry, "h", "tm").meter(
      "m",
      new MeterView(counter),
    );
    counter.inc(120);
    vi.advanceTimersByTime(4_999);
    expect(meter.getRate()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(meter.getRate()).toBe(2);
    await registry.close();
    counter.inc(120);
    vi.advanceTimersByTime(10_000);
    expect(meter.getRate()).toBe(2);
  });

  it("calls a push reporter's report() every metrics.reporter.<name>.interval", async () => {
    vi.useFakeTimers();
    const reporter = new RecordingReporter();
    const registry = new MetricRegistry({
      reporters: [{ name: "push", reporter, intervalMs: 1_000 }],
    });
    vi.advanceTimersByTime(3_500);
    expect(reporter.reports).toBe(3);
    await registry.close();
    vi.advanceTimersByTime(3_000);
    expect(reporter.reports).toBe(3);
    expect(reporter.closed).toBe(1);
  });

  it("dumps every metric with its scope, variables and current value", async () => {
    const registry = new MetricRegistry({ updateViewsAutomatically: false });
    const tm = new TaskManagerMetricGroup(registry, "h", "tm");
    const task = tm.addJob("j", "job").addTask({
      vertexId: "v",
      executionAttemptId: "a",
      taskName: "Map",
      subtaskIndex: 0,
      attemptNumber: 0,
    });
    task.io.numRecordsOut.inc(300);
    registry.viewUpdater.update();
    const dump = registry.dump();
    const out = dump.find((d) => d.name === "numRecordsOutPerSecond");
    expect(out).toEqual({
      scope: ["h", "taskmanager", "tm", "job", "Map", "0"],
      logicalScope: "taskmanager.job.task",
      variables: task.getAllVariables(),
      name: "numRecordsOutPerSecond",
      type: "meter",
      value: 5,
      count: 300,
    });
    expect(dump.find((d) => d.name === "numRecordsOut")?.value).toBe(300);
    expect(dump.find((d) => d.name === "busyTimeMsPerSecond")?.type).toBe("gauge");
    task.close();
    expect(registry.dump().some((d) => d.logicalScope === "taskmanager.job.task")).toBe(false);
    await registry.close();
  });

  it("closes every reporter and throws the first failure of a close after trying all", async () => {
    const second = new RecordingReporter();
    const registry = new MetricRegistry({
      reporters: [
        {
          name: "failing",
          reporter: {
            notifyOfAddedMetric() {},
            notifyOfRemovedMetric() {},
            close: async () => {
              throw new Error("socket stuck");
            },
          },
          intervalMs: 0,
        },
        { name: "second", reporter: second, intervalMs: 0 },
      ],
      updateViewsAutomatically: false,
    });
    await expect(registry.close()).rejects.toThrow("socket stuck");
    expect(second.closed).toBe(1);
    // Registering after shutdown reaches no reporter.
    new TaskManagerMetricGroup(registry, "h", "tm").gauge("late", () => 1);
    expect(second.added).toEqual([]);
  });
});
