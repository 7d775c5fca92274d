import type { MetricRegistry } from "../metric-registry.js";
import { ScopeVariables } from "../scope-format.js";
import { AbstractMetricGroup } from "./abstract-metric-group.js";
import { TaskManagerJobMetricGroup } from "./task-manager-job-metric-group.js";

/**
 * The root group of a worker process (Flink's `TaskManagerMetricGroup`): scope
 * `metrics.scope.tm` (`<host>.taskmanager.<tm_id>`), logical scope `taskmanager`. The shuffle
 * environment registers its process-wide metrics here (`Status.Shuffle.Netty.*`); below it, one
 * group per job with tasks on the worker.
 */
export class TaskManagerMetricGroup extends AbstractMetricGroup {
  /** The worker's host (`<host>`). */
  readonly hostname: string;
  /** The worker's resource id (`<tm_id>`). */
  readonly taskManagerId: string;
  private readonly jobs = new Map<string, TaskManagerJobMetricGroup>();

  constructor(registry: MetricRegistry, hostname: string, taskManagerId: string) {
    const variables = {
      [ScopeVariables.HOST]: hostname,
      [ScopeVariables.TASKMANAGER_ID]: taskManagerId,
    };
    super(registry, registry.scopeFormats.taskManager.formatScope(variables), undefined, variables);
    this.hostname = hostname;
    this.taskManagerId = taskManagerId;
  }

  protected get groupName(): string {
    return "taskmanager";
  }

  /** The group of job `jobId` on this worker (created with its first task). */
  addJob(jobId: string, jobName: string): TaskManagerJobMetricGroup {
    let job = this.jobs.get(jobId);
    if (job === undefined || job.isClosed()) {
      job = new TaskManagerJobMetricGroup(this.registry, this, jobId, jobName);
      if (!this.isClosed()) this.jobs.set(jobId, job);
    }
    return job;
  }

  /** The groups of the jobs that have tasks here. */
  getJobs(): ReadonlyMap<string, TaskManagerJobMetricGroup> {
    return this.jobs;
  }

  /** Forgets a job group once it closed (called by the job group). */
  removeJob(job: TaskManagerJobMetricGroup): void {
    if (this.jobs.get(job.jobId) === job) this.jobs.delete(job.jobId);
  }

  /** Closes the group and every job group below it. Idempotent. */
  override close(): void {
    if (this.isClosed()) return;
    super.close();
    for (const job of [...this.jobs.values()]) job.close();
    this.jobs.clear();
  }
}
