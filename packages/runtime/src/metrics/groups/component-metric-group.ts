import type { MetricRegistry } from "../metric-registry.js";
import { AbstractMetricGroup } from "./abstract-metric-group.js";
import type { JobGroupOwner, JobMetricGroup } from "./job-metric-group.js";

/**
 * The root group of a process (Flink's `ComponentMetricGroup` for the job manager and the task
 * managers): one {@link JobMetricGroup} per job below it, created on first use and forgotten
 * when it closes; closing the root closes them all.
 */
export abstract class ComponentMetricGroup<J extends JobMetricGroup>
  extends AbstractMetricGroup
  implements JobGroupOwner
{
  /** The process's host (`<host>`). */
  readonly hostname: string;
  private readonly jobs = new Map<string, J>();

  protected constructor(
    registry: MetricRegistry,
    scopeComponents: readonly string[],
    variables: Readonly<Record<string, string>>,
    hostname: string,
  ) {
    super(registry, scopeComponents, undefined, variables);
    this.hostname = hostname;
  }

  /** Creates the group of a job that has none yet. */
  protected abstract createJobGroup(jobId: string, jobName: string): J;

  /** The group of job `jobId` in this process (created with its first use). */
  addJob(jobId: string, jobName: string): J {
    let job = this.jobs.get(jobId);
    if (job === undefined || job.isClosed()) {
      job = this.createJobGroup(jobId, jobName);
      if (!this.isClosed()) this.jobs.set(jobId, job);
    }
    return job;
  }

  /** The groups of the jobs in this process. */
  getJobs(): ReadonlyMap<string, J> {
    return this.jobs;
  }

  /** Forgets a job group once it closed (called by the job group). */
  removeJob(job: JobMetricGroup): void {
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
