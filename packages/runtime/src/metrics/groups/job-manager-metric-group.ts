import type { MetricRegistry } from "../metric-registry.js";
import { ScopeVariables } from "../scope-format.js";
import { ComponentMetricGroup } from "./component-metric-group.js";
import { JobManagerJobMetricGroup } from "./job-manager-job-metric-group.js";

/**
 * The root group of the coordinator (Flink's `JobManagerMetricGroup`): scope `metrics.scope.jm`
 * (`<host>.jobmanager`), logical scope `jobmanager`; below it, one group per running job.
 */
export class JobManagerMetricGroup extends ComponentMetricGroup<JobManagerJobMetricGroup> {
  constructor(registry: MetricRegistry, hostname: string) {
    const variables = { [ScopeVariables.HOST]: hostname };
    super(registry, registry.scopeFormats.jobManager.formatScope(variables), variables, hostname);
  }

  protected get groupName(): string {
    return "jobmanager";
  }

  protected createJobGroup(jobId: string, jobName: string): JobManagerJobMetricGroup {
    return new JobManagerJobMetricGroup(this.registry, this, jobId, jobName);
  }
}
