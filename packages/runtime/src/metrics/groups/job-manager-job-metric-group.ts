import type { MetricRegistry } from "../metric-registry.js";
import { ScopeVariables } from "../scope-format.js";
import { AbstractMetricGroup } from "./abstract-metric-group.js";
import type { JobManagerMetricGroup } from "./job-manager-metric-group.js";

/**
 * A job's group on the coordinator (Flink's `JobManagerJobMetricGroup`): scope
 * `metrics.scope.jm-job` (`<host>.jobmanager.<job_name>`), logical scope `jobmanager.job`,
 * variables `<job_id>` and `<job_name>`. Closed when the job ends.
 */
export class JobManagerJobMetricGroup extends AbstractMetricGroup {
  /** The job's id (`<job_id>`). */
  readonly jobId: string;
  /** The job's name (`<job_name>`). */
  readonly jobName: string;
  private readonly owner: JobManagerMetricGroup;

  constructor(
    registry: MetricRegistry,
    parent: JobManagerMetricGroup,
    jobId: string,
    jobName: string,
  ) {
    const variables = { [ScopeVariables.JOB_ID]: jobId, [ScopeVariables.JOB_NAME]: jobName };
    super(
      registry,
      registry.scopeFormats.jobManagerJob.formatScope({
        ...parent.getAllVariables(),
        ...variables,
      }),
      parent,
      variables,
    );
    this.owner = parent;
    this.jobId = jobId;
    this.jobName = jobName;
  }

  protected get groupName(): string {
    return "job";
  }

  /** Closes the group and detaches it from the job manager. Idempotent. */
  override close(): void {
    if (this.isClosed()) return;
    super.close();
    this.owner.removeJob(this);
  }
}
