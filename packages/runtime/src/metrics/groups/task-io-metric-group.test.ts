import { describe, expect, it } from "vitest";
import { ManualClock } from "../../clock/test-support/manual-clock.js";
import { MetricRegistry } from "../metric-registry.js";
import { TaskManagerMetricGroup } from "./task-manager-metric-group.js";

function taskGroup(clock: ManualClock) {
  const registry = new MetricRegistry({ clock, updateViewsAutomatically: false });
  const task = new TaskManagerMetricGroup(registry, "h", "tm").addJob("j", "job").addTask({
    vertexId: "v",
    executionAttemptId: "a",
    taskName: "Map",
    subtaskIndex: 0,
    attemptNumber: 0,
  });
  return { registry, task, io: task.io };
}

function value(task: ReturnType<typeof taskGroup>["task"], name: string): number {
  const metric = task.getMetrics().get(name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  if (metric.metricType === "gauge") return metric.getValue();
  if (metric.metricType === "meter") return metric.getRate();
  return metric.getCount();
}

describe("TaskIOMetricGroup", () => {
  it("derives busy time from idle and back-pressured time as Flink does, NaN before the task runs", async () => {
    const clock = new ManualClock();
    const { registry, task, io } = taskGroup(clock);
    expect(value(task, "busyTimeMsPerSecond")).toBeNaN();
    expect(value(task, "accumulatedBusyTime")).toBeNaN();
    io.markTaskStart();
    // In 5 s: 1 s idle, 1.5 s back-pressured, 2.5 s busy.
    io.idleTimeMsPerSecond.markStart();
    clock.advanceMillis(1_000);
    io.idleTimeMsPerSecond.markEnd();
    clock.advanceMillis(2_500);
    io.softBackPressuredTimeMsPerSecond.markStart();
    clock.advanceMillis(1_500);
    io.softBackPressuredTimeMsPerSecond.markEnd();
    registry.viewUpdater.update();
    expect(value(task, "idleTimeMsPerSecond")).toBe(200);
    expect(value(task, "backPressuredTimeMsPerSecond")).toBe(300);
    expect(value(task, "busyTimeMsPerSecond")).toBe(500);
    expect(value(task, "accumulatedIdleTime")).toBe(1_000);
    expect(value(task, "accumulatedBackPressuredTime")).toBe(1_500);
    expect(value(task, "accumulatedBusyTime")).toBe(2_500);
    await registry.close();
  });

  it("adds soft and hard back-pressured time into backPressuredTimeMsPerSecond and keeps the longest period of each", async () => {
    const clock = new ManualClock();
    const { registry, task, io } = taskGroup(clock);
    io.markTaskStart();
    // In 5 s: soft 0.4 s then 0.6 s, hard 1 s.
    io.softBackPressuredTimeMsPerSecond.markStart();
    clock.advanceMillis(400);
    io.softBackPressuredTimeMsPerSecond.markEnd();
    io.hardBackPressuredTimeMsPerSecond.markStart();
    clock.advanceMillis(1_000);
    io.hardBackPressuredTimeMsPerSecond.markEnd();
    io.softBackPressuredTimeMsPerSecond.markStart();
    clock.advanceMillis(600);
    io.softBackPressuredTimeMsPerSecond.markEnd();
    clock.advanceMillis(3_000);
    registry.viewUpdater.update();
    expect(value(task, "softBackPressuredTimeMsPerSecond")).toBe(200);
    expect(value(task, "hardBackPressuredTimeMsPerSecond")).toBe(200);
    expect(value(task, "backPressuredTimeMsPerSecond")).toBe(400);
    expect(value(task, "maxSoftBackPressureTimeMs")).toBe(600);
    expect(value(task, "maxHardBackPressureTimeMs")).toBe(1_000);
    expect(value(task, "accumulatedBackPressuredTime")).toBe(2_000);
    expect(value(task, "busyTimeMsPerSecond")).toBe(600);
    await registry.close();
  });

  it("reads the checkpoint alignment time and start delay of the task's barrier handler", async () => {
    const { registry, task, io } = taskGroup(new ManualClock());
    let alignment = 0;
    io.registerCheckpointMetrics({
      getAlignmentDurationNanos: () => alignment,
      getCheckpointStartDelayNanos: () => 7_000_000,
    });
    alignment = 42_000;
    expect(value(task, "checkpointAlignmentTime")).toBe(42_000);
    expect(value(task, "checkpointStartDelayNanos")).toBe(7_000_000);
    await registry.close();
  });

  it("counts records and rates them per second over the meter's window", async () => {
    const { registry, task, io } = taskGroup(new ManualClock());
    io.numRecordsIn.inc(600);
    io.numRecordsOut.inc(1_200);
    registry.viewUpdater.update();
    expect(value(task, "numRecordsIn")).toBe(600);
    expect(value(task, "numRecordsOut")).toBe(1_200);
    expect(value(task, "numRecordsInPerSecond")).toBe(10);
    expect(value(task, "numRecordsOutPerSecond")).toBe(20);
    await registry.close();
  });
});
