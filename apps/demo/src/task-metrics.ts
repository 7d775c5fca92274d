import { metricValue, type SubtaskMetrics, subtaskMetrics } from "@sluice/cluster";
import { IllegalStateError } from "@sluice/core";
import { MetricNames, type Task } from "@sluice/runtime";
import type { TaskProgress } from "./task-progress.js";
import { SOURCE_VERTEX } from "./word-count-job.js";

/**
 * The progress line's and the closing table's counters of one subtask, read from its metrics (the
 * same meters the dashboard and the Prometheus endpoint show): records out of a source
 * (`numRecordsOut`) or into a counter (`numRecordsIn`), bytes out of the source's partition
 * (`numBytesOut`) or into the counter's gate (`numBytesIn`), the output or input pool usage and
 * the accumulated back-pressured time.
 */
export function taskProgressOf(
  subtask: SubtaskMetrics,
  name: string,
  finished: boolean,
): TaskProgress {
  const source = subtask.vertex === SOURCE_VERTEX;
  return {
    name,
    kind: source ? "source" : "count",
    subtaskIndex: subtask.subtaskIndex,
    records: metricValue(
      subtask,
      source ? MetricNames.IO_NUM_RECORDS_OUT : MetricNames.IO_NUM_RECORDS_IN,
    ),
    bytes: metricValue(subtask, source ? "numBytesOut" : "numBytesIn"),
    poolUsage: Math.min(
      1,
      Math.max(0, metricValue(subtask, source ? "outPoolUsage" : "inPoolUsage")),
    ),
    backPressuredTimeMs: metricValue(subtask, MetricNames.ACC_TASK_BACK_PRESSURED_TIME),
    finished,
  };
}

/** `Count (1/2)#0`: the name Flink prints for a subtask attempt. */
export function subtaskName(subtask: SubtaskMetrics, parallelism: number): string {
  return `${subtask.vertex} (${subtask.subtaskIndex + 1}/${parallelism})#${subtask.attemptNumber}`;
}

/**
 * A running task's counters, read from its own metrics (what it returns with its result).
 * `restoredRecords`: the records of the checkpoint a restored attempt started from, which its
 * metrics (counting this attempt's records) do not hold.
 */
export function taskProgressOfTask(
  task: Task,
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
  const progress = taskProgressOf(subtask, task.name, finished);
  return { ...progress, records: progress.records + restoredRecords };
}
