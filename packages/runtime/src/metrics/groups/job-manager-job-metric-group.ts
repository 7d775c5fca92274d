import type { MetricRegistry } from "../metric-registry.js";
import type { JobManagerMetricGroup } from "./job-manager-metric-group.js";
import { JobMetricGroup } from "./job-metric-group.js";

/**
 * A job's group on the coordinator (Flink's `JobManagerJobMetricGroup`): scope
 * `metrics.scope.jm-job` (`<host>.jobmanager.<job_name>`), logical scope `jobmanager.job`,
 * variables `<job_id>` and `<job_name>`. Closed when the job ends.
 */
export class JobManagerJobMetricGroup extends JobMetricGroup {
  constructor(
    registry: MetricRegistry,
    parent: JobManagerMetricGroup,
    jobId: string,
    jobName: string,
  ) {
    super(registry, parent, registry.scopeFormats.jobManagerJob, jobId, jobName);
  }
}
