import type { RemoteMetricDump } from "@sluice/cluster";
import { IllegalStateError } from "@sluice/core";
import { type MetricDump, MetricNames, type Task } from "@sluice/runtime";
import type { TaskProgress } from "./task-progress.js";
import { SOURCE_VERTEX } from "./word-count-job.js";

/** A metric as `MetricRegistry.dump()` or a task manager's metric query returns it. */
export type AnyMetricDump = MetricDump | RemoteMetricDump;

/** Logical scope of a task's metrics; its shuffle subgroups (`.Shuffle.Netty...`) start with it. */
const TASK_SCOPE = "taskmanager.job.task";

/** The metrics of one subtask attempt, by metric name (names are unique within a task). */
export interface SubtaskMetrics {
  /** `<task_attempt_id>`. */
  readonly attemptId: string;
  /** `<task_name>`: the vertex name. */
  readonly vertex: string;
  readonly subtaskIndex: number;
  readonly attemptNumber: number;
  /** `<tm_id>`: the task manager it runs on. */
  readonly taskManagerId: string;
  /** Each metric's value (`null`: no value yet) and, for meters, its count. */
  readonly values: ReadonlyMap<string, { readonly value: number | null; readonly count?: number }>;
}

/** Groups the task-scope metrics of a registry's dump by subtask attempt. */
export function subtaskMetrics(dumps: readonly AnyMetricDump[]): SubtaskMetrics[] {
  type Value = { value: number | null; count?: number };
  const byAttempt = new Map<string, SubtaskMetrics & { values: Map<string, Value> }>();
  for (const dump of dumps) {
    if (!dump.logicalScope.startsWith(TASK_SCOPE)) continue;
    const variables = dump.variables;
    const attemptId = variables["<task_attempt_id>"];
    if (attemptId === undefined) continue;
    let subtask = byAttempt.get(attemptId);
    if (subtask === undefined) {
      subtask = {
        attemptId,
        vertex: variables["<task_name>"] ?? "",
        subtaskIndex: Number(variables["<subtask_index>"] ?? 0),
        attemptNumber: Number(variables["<task_attempt_num>"] ?? 0),
        taskManagerId: variables["<tm_id>"] ?? "",
        values: new Map<string, Value>(),
      };
      byAttempt.set(attemptId, subtask);
    }
    const value = dump.value === null || Number.isNaN(dump.value) ? null : dump.value;
    subtask.values.set(
      dump.name,
      dump.count === undefined ? { value } : { value, count: dump.count },
    );
  }
  return [...byAttempt.values()];
}

/** A metric's value (a counter's count, a gauge's value, a meter's rate), 0 when absent. */
export function metricValue(subtask: SubtaskMetrics, name: string): number {
  return subtask.values.get(name)?.value ?? 0;
}

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
