import type { MetricRegistry } from "../metric-registry.js";
import { ScopeVariables } from "../scope-format.js";
import { AbstractMetricGroup } from "./abstract-metric-group.js";
import { JobManagerJobMetricGroup } from "./job-manager-job-metric-group.js";

/**
 * The root group of the coordinator (Flink's `JobManagerMetricGroup`): scope `metrics.scope.jm`
 * (`<host>.jobmanager`), logical scope `jobmanager`; below it, one group per running job.
 */
export class JobManagerMetricGroup extends AbstractMetricGroup {
  /** The coordinator's host (`<host>`). */
  readonly hostname: string;
  private readonly jobs = new Map<string, JobManagerJobMetricGroup>();

  constructor(registry: MetricRegistry, hostname: string) {
    const variables = { [ScopeVariables.HOST]: hostname };
    super(registry, registry.scopeFormats.jobManager.formatScope(variables), undefined, variables);
    this.hostname = hostname;
  }

  protected get groupName(): string {
    return "jobmanager";
  }

  /** The group of job `jobId` on the coordinator. */
  addJob(jobId: string, jobName: string): JobManagerJobMetricGroup {
    let job = this.jobs.get(jobId);
    if (job === undefined || job.isClosed()) {
      job = new JobManagerJobMetricGroup(this.registry, this, jobId, jobName);
      if (!this.isClosed()) this.jobs.set(jobId, job);
    }
    return job;
  }

  /** The groups of the jobs on the coordinator. */
  getJobs(): ReadonlyMap<string, JobManagerJobMetricGroup> {
    return this.jobs;
  }

  /** Forgets a job group once it closed (called by the job group). */
  removeJob(job: JobManagerJobMetricGroup): void {
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
