import type { MetricDump } from "@sluice/runtime";
import { ScopeVariables } from "@sluice/runtime/plugin";
import type { RemoteMetricDump } from "../metric-query.js";

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
    const attemptId = variables[ScopeVariables.TASK_ATTEMPT_ID];
    if (attemptId === undefined) continue;
    let subtask = byAttempt.get(attemptId);
    if (subtask === undefined) {
      subtask = {
        attemptId,
        vertex: variables[ScopeVariables.TASK_NAME] ?? "",
        subtaskIndex: Number(variables[ScopeVariables.TASK_SUBTASK_INDEX] ?? 0),
        attemptNumber: Number(variables[ScopeVariables.TASK_ATTEMPT_NUM] ?? 0),
        taskManagerId: variables[ScopeVariables.TASKMANAGER_ID] ?? "",
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
