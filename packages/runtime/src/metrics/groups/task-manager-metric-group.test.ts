import { describe, expect, it } from "vitest";
import { MetricRegistry } from "../metric-registry.js";
import { RecordingReporter } from "../test-support/recording-reporter.js";
import { TaskManagerMetricGroup } from "./task-manager-metric-group.js";

const TASK = {
  vertexId: "v-1",
  executionAttemptId: "attempt-1",
  taskName: "Count",
  subtaskIndex: 1,
  attemptNumber: 0,
};

function workerWith(reporter = new RecordingReporter()) {
  const registry = new MetricRegistry({
    reporters: [{ name: "rec", reporter, intervalMs: 0 }],
    updateViewsAutomatically: false,
  });
  return { registry, reporter, tm: new TaskManagerMetricGroup(registry, "host-1", "tm-1") };
}

describe("metric groups of a worker", () => {
  it("scopes task manager, job, task and operator metrics as Flink's default scope formats do", async () => {
    const { registry, tm } = workerWith();
    const job = tm.addJob("job-1", "word count");
    const task = job.addTask(TASK);
    const operator = task.addOperator("Tokenizer");
    expect(tm.getScopeComponents()).toEqual(["host-1", "taskmanager", "tm-1"]);
    expect(job.getScopeComponents()).toEqual(["host-1", "taskmanager", "tm-1", "word count"]);
    expect(task.getScopeComponents()).toEqual([
      "host-1",
      "taskmanager",
      "tm-1",
      "word count",
      "Count",
      "1",
    ]);
    expect(operator.getScopeComponents()).toEqual([
      "host-1",
      "taskmanager",
      "tm-1",
      "word count",
      "Tokenizer",
      "1",
    ]);
    expect(tm.getLogicalScope()).toBe("taskmanager");
    expect(task.getLogicalScope()).toBe("taskmanager.job.task");
    expect(operator.getLogicalScope((s) => s, "_")).toBe("taskmanager_job_task_operator");
    expect(task.getMetricIdentifier("numRecordsIn")).toBe(
      "host-1.taskmanager.tm-1.word count.Count.1.numRecordsIn",
    );
    expect(task.getAllVariables()).toEqual({
      "<host>": "host-1",
      "<tm_id>": "tm-1",
      "<job_id>": "job-1",
      "<job_name>": "word count",
      "<task_id>": "v-1",
      "<task_attempt_id>": "attempt-1",
      "<task_name>": "Count",
      "<subtask_index>": "1",
      "<task_attempt_num>": "0",
    });
    expect(operator.getAllVariables()["<operator_name>"]).toBe("Tokenizer");
    await registry.close();
  });

  it("names subgroups in the scope and the logical scope, with the variables of their parent", async () => {
    const { registry, tm } = workerWith();
    const task = tm.addJob("job-1", "wc").addTask(TASK);
    const buffers = task
      .addGroup("Shuffle")
      .addGroup("Netty")
      .addGroup("Input")
      .addGroup("Buffers");
    expect(buffers.getLogicalScope()).toBe("taskmanager.job.task.Shuffle.Netty.Input.Buffers");
    expect(buffers.getScopeComponents().slice(-4)).toEqual([
      "Shuffle",
      "Netty",
      "Input",
      "Buffers",
    ]);
    expect(buffers.getAllVariables()).toEqual(task.getAllVariables());
    expect(task.addGroup("Shuffle")).toBe(task.addGroup("Shuffle"));
    await registry.close();
  });

  it("removes a task's metrics from the reporters when it closes, and the job group with its last task", async () => {
    const { registry, reporter, tm } = workerWith();
    tm.gauge("up", () => 1);
    const job = tm.addJob("job-1", "wc");
    const first = job.addTask(TASK);
    const second = job.addTask({ ...TASK, executionAttemptId: "attempt-2", subtaskIndex: 0 });
    first.addGroup("Shuffle").counter("extra");
    const before = reporter.live().length;
    first.close();
    expect(reporter.live().length).toBeLessThan(before);
    expect(reporter.live().some((id) => id.includes(".Count.1."))).toBe(false);
    expect(reporter.live().some((id) => id.includes(".Count.0."))).toBe(true);
    expect(job.isClosed()).toBe(false);
    second.close();
    expect(job.isClosed()).toBe(true);
    expect(tm.getJobs().size).toBe(0);
    expect(reporter.live()).toEqual(["host-1.taskmanager.tm-1.up"]);
    // A job that comes back gets a fresh group.
    expect(tm.addJob("job-1", "wc").isClosed()).toBe(false);
    tm.close();
    expect(reporter.live()).toEqual([]);
    await registry.close();
  });

  it("keeps the first metric of a name and warns about the second", async () => {
    const { registry, reporter, tm } = workerWith();
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    try {
      const first = tm.counter("numThings");
      const second = tm.counter("numThings");
      await new Promise((resolve) => setImmediate(resolve));
      expect(tm.getMetrics().get("numThings")).toBe(first);
      expect(second).not.toBe(first);
      expect(reporter.added.filter((r) => r.name === "numThings")).toHaveLength(1);
      expect(warnings.some((w) => w.includes("host-1.taskmanager.tm-1.numThings"))).toBe(true);
    } finally {
      process.off("warning", onWarning);
      await registry.close();
    }
  });

  it("ignores metrics registered on a closed group", async () => {
    const { registry, reporter, tm } = workerWith();
    const task = tm.addJob("job-1", "wc").addTask(TASK);
    task.close();
    const count = reporter.added.length;
    task.gauge("late", () => 1);
    expect(reporter.added.length).toBe(count);
    await registry.close();
  });
});
