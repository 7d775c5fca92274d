import type { MetricRegistry } from "../metric-registry.js";
import { ScopeVariables } from "../scope-format.js";
import { ComponentMetricGroup } from "./component-metric-group.js";
import { TaskManagerJobMetricGroup } from "./task-manager-job-metric-group.js";

/**
 * The root group of a worker process (Flink's `TaskManagerMetricGroup`): scope
 * `metrics.scope.tm` (`<host>.taskmanager.<tm_id>`), logical scope `taskmanager`. The shuffle
 * environment registers its process-wide metrics here (`Status.Shuffle.Netty.*`); below it, one
 * group per job with tasks on the worker (created with its first task).
 */
export class TaskManagerMetricGroup extends ComponentMetricGroup<TaskManagerJobMetricGroup> {
  /** The worker's resource id (`<tm_id>`). */
  readonly taskManagerId: string;

  constructor(registry: MetricRegistry, hostname: string, taskManagerId: string) {
    const variables = {
      [ScopeVariables.HOST]: hostname,
      [ScopeVariables.TASKMANAGER_ID]: taskManagerId,
    };
    super(registry, registry.scopeFormats.taskManager.formatScope(variables), variables, hostname);
    this.taskManagerId = taskManagerId;
  }

  protected get groupName(): string {
    return "taskmanager";
  }

  protected createJobGroup(jobId: string, jobName: string): TaskManagerJobMetricGroup {
    return new TaskManagerJobMetricGroup(this.registry, this, jobId, jobName);
  }
}
