import { metricValue, subtaskMetrics } from "@sluice/cluster";
import { IllegalStateError } from "@sluice/core";
import { MetricNames, type Task } from "@sluice/runtime";
import type { TaskKind, TaskProgress } from "./task-progress.js";

/**
 * A running task's final counters, read from its own metrics (what it returns with its result):
 * records out of a source (`numRecordsOut`) or into a counter (`numRecordsIn`), bytes out of the
 * source's partition (`numBytesOut`) or into the counter's gate (`numBytesIn`), the output or input
 * pool usage and the accumulated back-pressured time — the meters the dashboard and the
 * Prometheus endpoints show. `restoredRecords`: the records of the checkpoint a restored attempt
 * started from, which its metrics (counting this attempt's records) do not hold.
 */
export function taskProgressOfTask(
  task: Task,
  kind: TaskKind,
  finished: boolean,
  restoredRecords = 0,
): TaskProgress {
  const attemptId = task.executionAttemptId.toString();
  const own = task.metricGroup.registry
    .dump()
    .filter((dump) => dump.variables["<task_attempt_id>"] === attemptId);
  const [subtask] = subtaskMetrics(own);
  if (subtask === undefined) {
    throw new IllegalStateError(`task ${task.name} has no metrics in its task manager's registry`);
  }
  const source = kind === "source";
  return {
    name: task.name,
    kind,
    subtaskIndex: subtask.subtaskIndex,
    records:
      metricValue(
        subtask,
        source ? MetricNames.IO_NUM_RECORDS_OUT : MetricNames.IO_NUM_RECORDS_IN,
      ) + restoredRecords,
    bytes: metricValue(subtask, source ? "numBytesOut" : "numBytesIn"),
    poolUsage: Math.min(
      1,
      Math.max(0, metricValue(subtask, source ? "outPoolUsage" : "inPoolUsage")),
    ),
    backPressuredTimeMs: metricValue(subtask, MetricNames.ACC_TASK_BACK_PRESSURED_TIME),
    finished,
  };
}
