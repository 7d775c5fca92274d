import type { MetricRegistry } from "../metric-registry.js";
import { JobMetricGroup } from "./job-metric-group.js";
import type { TaskManagerMetricGroup } from "./task-manager-metric-group.js";
import { type TaskInfo, TaskMetricGroup } from "./task-metric-group.js";

/**
 * A job's group on a worker (Flink's `TaskManagerJobMetricGroup`): scope `metrics.scope.tm-job`,
 * logical scope `taskmanager.job`, variables `<job_id>` and `<job_name>`. It closes itself when
 * its last task group closes, as in Flink.
 */
export class TaskManagerJobMetricGroup extends JobMetricGroup {
  private readonly tasks = new Map<string, TaskMetricGroup>();

  constructor(
    registry: MetricRegistry,
    parent: TaskManagerMetricGroup,
    jobId: string,
    jobName: string,
  ) {
    super(registry, parent, registry.scopeFormats.taskManagerJob, jobId, jobName);
  }

  /** The group of one task (one execution attempt of a subtask) of this job. */
  addTask(info: TaskInfo): TaskMetricGroup {
    let task = this.tasks.get(info.executionAttemptId);
    if (task === undefined || task.isClosed()) {
      task = new TaskMetricGroup(this.registry, this, info);
      if (!this.isClosed()) this.tasks.set(info.executionAttemptId, task);
    }
    return task;
  }

  /** The groups of this job's tasks on the worker. */
  getTasks(): ReadonlyMap<string, TaskMetricGroup> {
    return this.tasks;
  }

  /** Forgets a task group once it closed; the job group closes with its last task. */
  removeTask(task: TaskMetricGroup): void {
    if (this.tasks.get(task.executionAttemptId) === task)
      this.tasks.delete(task.executionAttemptId);
    if (this.tasks.size === 0 && !this.isClosed()) this.close();
  }

  /** Closes the group and its task groups, and detaches it from the task manager. Idempotent. */
  override close(): void {
    if (this.isClosed()) return;
    const tasks = [...this.tasks.values()];
    this.tasks.clear();
    super.close();
    for (const task of tasks) task.close();
  }
}
