import { afterEach, describe, expect, it, vi } from "vitest";
import type { RemoteMetricDump } from "../metric-query.js";
import type { RegisteredTaskManager } from "../registered-task-manager.js";
import { MetricFetcher } from "./metric-fetcher.js";
import { metricValue } from "./subtask-metrics.js";

const SOURCE_VERTEX = "Source";

const VARIABLES = {
  "<host>": "127.0.0.1",
  "<tm_id>": "tm-0",
  "<job_name>": "word count",
  "<task_name>": SOURCE_VERTEX,
  "<task_attempt_id>": "attempt-0",
  "<task_attempt_num>": "0",
  "<subtask_index>": "1",
};

/** A source subtask's metrics as a task manager's registry dumps them. */
function sourceMetrics(values: Record<string, number>): RemoteMetricDump[] {
  return Object.entries(values).map(([name, value]) => ({
    scope: ["127.0.0.1", "taskmanager", "tm-0", "word count", SOURCE_VERTEX, "1"],
    logicalScope: name.endsWith("PoolUsage")
      ? "taskmanager.job.task.Shuffle.Netty.Output.Buffers"
      : "taskmanager.job.task",
    variables: VARIABLES,
    name,
    type: "gauge",
    value,
  }));
}

afterEach(() => vi.restoreAllMocks());

describe("the job manager's metric fetcher", () => {
  it("keeps every subtask's latest metrics and derives per-second values from their counts", async () => {
    let answer: () => Promise<RemoteMetricDump[]> = async () =>
      sourceMetrics({
        numRecordsOut: 100,
        numBytesOut: 1_000,
        accumulatedBackPressuredTime: 0,
        accumulatedIdleTime: 0,
        accumulatedBusyTime: 0,
        outPoolUsage: 0.25,
      });
    const taskManager = {
      index: 0,
      connected: true,
      queryMetrics: () => answer(),
    } as unknown as RegisteredTaskManager;
    const updates: (readonly unknown[])[] = [];
    const fetcher = new MetricFetcher(
      () => [taskManager],
      (subtasks) => updates.push(subtasks),
    );
    const now = vi.spyOn(performance, "now").mockReturnValue(10_000);
    fetcher.start(60_000);
    await fetcher.fetch();
    expect(fetcher.ratesOf("attempt-0").recordsOutPerSecond).toBe(0);

    now.mockReturnValue(12_000);
    answer = async () =>
      sourceMetrics({
        numRecordsOut: 2_100,
        numBytesOut: 21_000,
        accumulatedBackPressuredTime: 1_200,
        accumulatedIdleTime: 0,
        accumulatedBusyTime: 800,
        outPoolUsage: 1,
      });
    await fetcher.fetch();
    expect(fetcher.ratesOf("attempt-0")).toEqual({
      recordsInPerSecond: 0,
      recordsOutPerSecond: 1_000,
      bytesInPerSecond: 0,
      bytesOutPerSecond: 10_000,
      busyTimeMsPerSecond: 400,
      idleTimeMsPerSecond: 0,
      backPressuredTimeMsPerSecond: 600,
    });
    const [subtask] = fetcher.subtasks;
    expect(subtask).toMatchObject({ taskManager: 0, vertex: SOURCE_VERTEX, subtaskIndex: 1 });
    expect(metricValue(subtask as never, "numBytesOut")).toBe(21_000);
    expect(metricValue(subtask as never, "numRecordsIn")).toBe(0);

    // A task manager that cannot answer keeps its last values; once stopped, nothing changes.
    answer = () => Promise.reject(new Error("gone"));
    await fetcher.fetch();
    expect(fetcher.subtasks).toEqual([subtask]);
    fetcher.stop();
    const seen = updates.length;
    answer = async () => [];
    await fetcher.fetch();
    expect(updates.length).toBe(seen);
    expect(fetcher.subtasks).toEqual([subtask]);
  });
});

describe("the metric fetcher on demand", () => {
  it("queries the task managers only when its last round is older than the update interval", async () => {
    let queries = 0;
    const taskManager = {
      index: 0,
      connected: true,
      queryMetrics: async () => {
        queries++;
        return sourceMetrics({ numRecordsOut: queries });
      },
    } as unknown as RegisteredTaskManager;
    const now = vi.spyOn(performance, "now").mockReturnValue(1_000);
    const fetcher = new MetricFetcher(() => [taskManager], undefined, 10_000);
    await fetcher.update();
    await fetcher.update();
    expect(queries).toBe(1);
    now.mockReturnValue(10_999);
    await fetcher.update();
    expect(queries).toBe(1);
    now.mockReturnValue(11_000);
    await fetcher.update();
    expect(queries).toBe(2);
    expect(metricValue(fetcher.subtasks[0] as never, "numRecordsOut")).toBe(2);
  });
});
