export { GroupMetricSink } from "./group-metric-sink.js";
export {
  AbstractMetricGroup,
  GenericMetricGroup,
} from "./groups/abstract-metric-group.js";
export { JobManagerJobMetricGroup } from "./groups/job-manager-job-metric-group.js";
export { JobManagerMetricGroup } from "./groups/job-manager-metric-group.js";
export { OperatorMetricGroup } from "./groups/operator-metric-group.js";
export { type CheckpointTimings, TaskIOMetricGroup } from "./groups/task-io-metric-group.js";
export { TaskManagerJobMetricGroup } from "./groups/task-manager-job-metric-group.js";
export { TaskManagerMetricGroup } from "./groups/task-manager-metric-group.js";
export { type TaskInfo, TaskMetricGroup } from "./groups/task-metric-group.js";
export { DEFAULT_METER_TIME_SPAN_SECONDS, MeterView } from "./meter-view.js";
export type { MetricDump } from "./metric-dump.js";
export { MetricNames } from "./metric-names.js";
export {
  type MetricEndpoint,
  MetricRegistry,
  type MetricRegistryOptions,
} from "./metric-registry.js";
export { METRIC_WARNING_TYPE } from "./metric-warning.js";
export {
  configuredReporterNames,
  type ReporterSetup,
  setUpReporters,
} from "./reporter-setup.js";
export {
  SCOPE_INHERIT_PARENT,
  SCOPE_SEPARATOR,
  ScopeFormat,
  ScopeVariables,
} from "./scope-format.js";
export { ScopeFormats } from "./scope-formats.js";
export { SimpleCounter } from "./simple-counter.js";
export { DEFAULT_TIMER_GAUGE_TIME_SPAN_SECONDS, TimerGauge } from "./timer-gauge.js";
export { isView, UPDATE_INTERVAL_SECONDS, type View } from "./view.js";
export { ViewUpdater } from "./view-updater.js";
