import type { MetricRegistry } from "../metric-registry.js";
import { type ScopeFormat, ScopeVariables } from "../scope-format.js";
import { AbstractMetricGroup } from "./abstract-metric-group.js";

/** A root group that keeps one group per job (see {@link ComponentMetricGroup}). */
export interface JobGroupOwner {
  /** Forgets `job` once it closed. */
  removeJob(job: JobMetricGroup): void;
}

/**
 * A job's group below a process's root group (Flink's `JobMetricGroup`): logical scope
 * `<root>.job`, variables `<job_id>` and `<job_name>`. It detaches itself from its root group when
 * it closes.
 */
export abstract class JobMetricGroup extends AbstractMetricGroup {
  /** The job's id (`<job_id>`). */
  readonly jobId: string;
  /** The job's name (`<job_name>`). */
  readonly jobName: string;
  private readonly owner: JobGroupOwner;

  protected constructor(
    registry: MetricRegistry,
    parent: AbstractMetricGroup & JobGroupOwner,
    scopeFormat: ScopeFormat,
    jobId: string,
    jobName: string,
  ) {
    const variables = { [ScopeVariables.JOB_ID]: jobId, [ScopeVariables.JOB_NAME]: jobName };
    super(
      registry,
      scopeFormat.formatScope({ ...parent.getAllVariables(), ...variables }),
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

  /** Closes the group and detaches it from its root group. Idempotent. */
  override close(): void {
    if (this.isClosed()) return;
    super.close();
    this.owner.removeJob(this);
  }
}
