import type { RegisteredTaskManager, RemoteMetricDump } from "@sluice/cluster";
import { afterEach, describe, expect, it, vi } from "vitest";
import { taskProgressOf } from "../task-metrics.js";
import { SOURCE_VERTEX } from "../word-count-job.js";
import { type FetchedSubtask, MetricFetcher } from "./metric-fetcher.js";

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
    const updates: (readonly FetchedSubtask[])[] = [];
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
    // The progress line reads the same metrics.
    expect(taskProgressOf(subtask as FetchedSubtask, "S", false)).toEqual({
      name: "S",
      kind: "source",
      subtaskIndex: 1,
      records: 2_100,
      bytes: 21_000,
      poolUsage: 1,
      backPressuredTimeMs: 1_200,
      finished: false,
    });

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
