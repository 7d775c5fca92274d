import type { MetricType } from "@sluice/runtime-api";

/**
 * One metric's current value, as a plain JSON-ready object (Flink's `MetricDump`, what its
 * `MetricQueryService` hands the web UI). `MetricRegistry.dump()` returns one per registered
 * metric; a dashboard or a progress line reads these instead of reaching into tasks.
 */
export interface MetricDump {
  /** The group's scope components (`["127.0.0.1", "taskmanager", "<tm id>", "job", "Count", "0"]`). */
  readonly scope: readonly string[];
  /** The logical scope (`taskmanager.job.task`, `taskmanager.job.task.Shuffle.Netty.Input.Buffers`). */
  readonly logicalScope: string;
  /** The group's variables (`<job_name>`, `<task_name>`, `<subtask_index>`, ...). */
  readonly variables: Readonly<Record<string, string>>;
  /** The metric's name within its group (`numRecordsInPerSecond`). */
  readonly name: string;
  /** The kind of metric. */
  readonly type: MetricType;
  /**
   * The value: a counter's count, a gauge's value, a meter's rate (per second). `NaN` (a gauge
   * without a value yet) becomes `null` in JSON.
   */
  readonly value: number;
  /** A meter's count (absent for counters and gauges). */
  readonly count?: number;
}
