/**
 * Replaces characters a reporter cannot use in names (Flink's `CharacterFilter`); e.g. Prometheus
 * turns everything outside `[a-zA-Z0-9:_]` into `_`.
 */
export type CharacterFilter = (input: string) => string;

/**
 * Where a metric belongs, as a reporter sees it (Flink's `MetricGroup` with its
 * `LogicalScopeProvider`). Groups form Flink's hierarchy: task manager → job → task (one per
 * subtask) → operator on a worker, job manager → job on the coordinator, and named subgroups such
 * as `Shuffle.Netty.Input.Buffers` below any of them.
 */
export interface MetricGroup {
  /**
   * The group's scope: the components of its scope format with the variables filled in, e.g.
   * `["127.0.0.1", "taskmanager", "<tm id>", "word count", "Count", "0"]` for a task under Flink's
   * default `metrics.scope.task`.
   */
  getScopeComponents(): readonly string[];

  /**
   * The variables of this group and its parents, keyed with angle brackets as in the scope
   * formats: `<host>`, `<tm_id>`, `<job_id>`, `<job_name>`, `<task_id>`, `<task_name>`,
   * `<task_attempt_id>`, `<task_attempt_num>`, `<subtask_index>`, `<operator_id>`,
   * `<operator_name>`. Tag-based reporters (Prometheus) turn them into labels.
   */
  getAllVariables(): Readonly<Record<string, string>>;

  /**
   * The metric's fully qualified name: the scope components and `metricName`, each passed through
   * `filter`, joined with `delimiter` (default `metrics.scope.delimiter`, `.`).
   */
  getMetricIdentifier(metricName: string, filter?: CharacterFilter, delimiter?: string): string;

  /**
   * The scope without variables, e.g. `taskmanager.job.task` or
   * `taskmanager.job.task.Shuffle.Netty.Input.Buffers`: the same for every subtask, so a
   * tag-based reporter names the metric with it (`flink_taskmanager_job_task_numRecordsIn`).
   */
  getLogicalScope(filter?: CharacterFilter, delimiter?: string): string;
}
