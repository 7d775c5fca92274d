export { DISTRIBUTION_LOADER, SLUICE_MAIN } from "./cli/distribution.js";
export { runSluice } from "./cli/main.js";
export { type CommandIO, ExitCode, exitCodeOf, formatError } from "./cli/process-shell.js";
export { RestClusterClient } from "./cli/rest-client.js";
export { CLUSTER_WARNING_TYPE } from "./cluster-warning.js";
export { type ShutdownReport, SLUICE_VERSION } from "./control-plane-messages.js";
export type { InitializingJob, JobClient } from "./dispatcher.js";
export {
  isHighAvailabilityModeActivated,
  loadHighAvailabilityServices,
} from "./high-availability-services-loader.js";
export {
  type HostAndPort,
  JobManager,
  type JobManagerApplicationHandler,
  type JobManagerDeployOptions,
  type JobManagerStartOptions,
  type ShutDownOptions,
} from "./job-manager.js";
export type { RefusedTaskManager } from "./job-manager-endpoint.js";
export { LocalCluster, type LocalClusterOptions } from "./local-cluster.js";
export { LocalTaskManagerProcess } from "./local-task-manager-process.js";
export type { RemoteMetricDump } from "./metric-query.js";
export { RegisteredTaskManager, type TaskManagerInfo } from "./registered-task-manager.js";
export type { BackPressureLevel } from "./rest/back-pressure-level.js";
export type {
  CheckpointingStatistics,
  CompletedCheckpointStatistics,
} from "./rest/checkpointing-statistics.js";
export type { ExceptionHistoryEntry, JobExceptionsInfo } from "./rest/execution-graph-info.js";
export type {
  BackPressureLevelName,
  IOMetricsInfo,
  JobDetailsInfo,
  JobOverviewInfo,
  PlanInfo,
  PlanInput,
  RatesInfo,
  RestJobStatus,
  StatusCounts,
  SubtaskInfo,
  TimesInfo,
  VertexInfo,
} from "./rest/job-details-info.js";
export type {
  ApplicationStatus,
  JobExecutionResultInfo,
  JobExecutionResultResponseBody,
  JobResultCheckpointsInfo,
} from "./rest/job-execution-result-info.js";
export type { JobMessageReplies, JobMessageReply } from "./rest/job-message-delivery.js";
export type { JobSubmitResponseBody } from "./rest/job-submit-handler.js";
export { type FetchedSubtask, MetricFetcher, type SubtaskRates } from "./rest/metric-fetcher.js";
export type { JobEvent } from "./rest/rest-routes.js";
export {
  type AnyMetricDump,
  metricValue,
  type SubtaskMetrics,
  subtaskMetrics,
} from "./rest/subtask-metrics.js";
export type { TaskManagerMetric } from "./rest/task-manager-metrics.js";
export type { VertexColour } from "./rest/vertex-colour.js";
export { WebMonitorEndpoint, type WebMonitorEndpointOptions } from "./rest/web-monitor-endpoint.js";
export { type ShufflePluginIdentity, shufflePluginIdentity } from "./shuffle-plugin-identity.js";
export {
  type LocalProcessOutput,
  type ProcessExit,
  SluiceProcess,
  type SluiceProcessOptions,
} from "./sluice-process.js";
export {
  TaskManager,
  type TaskManagerApplicationHandler,
  type TaskManagerStartOptions,
  type TaskManagerTermination,
} from "./task-manager.js";
export {
  describeTaskManagerWait,
  type TaskManagerWait,
  type TaskManagerWaitPhase,
} from "./task-manager-waiters.js";
