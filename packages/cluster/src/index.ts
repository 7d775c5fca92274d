export { DISTRIBUTION_LOADER, SLUICE_MAIN } from "./cli/distribution.js";
export { runSluice } from "./cli/main.js";
export { type CommandIO, ExitCode, exitCodeOf, formatError } from "./cli/process-shell.js";
export { RestClusterClient } from "./cli/rest-client.js";
export { CLUSTER_WARNING_TYPE } from "./cluster-warning.js";
export {
  CONTROL_PLANE_PATH,
  CONTROL_PLANE_VERSION,
  controlPlaneUrl,
  HOST_LOCAL_KEYS,
  JobManagerMethods,
  type ShutdownReport,
  SLUICE_VERSION,
  TaskManagerMethods,
} from "./control-plane-messages.js";
export { readControlPlaneTls } from "./control-plane-tls.js";
export type { JobClient } from "./dispatcher.js";
export {
  EMBEDDED_FENCING_TOKEN,
  EmbeddedHighAvailabilityServices,
} from "./embedded-high-availability-services.js";
export type {
  Delivery,
  ForwardedMethod,
  ForwardingTable,
  GatewayMethodName,
  GatewayMethods,
} from "./gateway-forwarding.js";
export { HeartbeatMonitor } from "./heartbeat-monitor.js";
export {
  HIGH_AVAILABILITY_ALIASES,
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
export {
  type JobMasterGatewayCaller,
  JobMasterGatewayMethods,
  type JobMasterGatewayReceiver,
} from "./job-master-gateway-methods.js";
export { LocalCluster, type LocalClusterOptions } from "./local-cluster.js";
export { LocalTaskManagerProcess } from "./local-task-manager-process.js";
export type { MethodSpec, MethodTable, ParamsOf, ResultOf } from "./method-spec.js";
export {
  metricDumpSchema,
  type RemoteMetricDump,
  toRemoteMetricDumps,
} from "./metric-query.js";
export { RegisteredTaskManager, type TaskManagerInfo } from "./registered-task-manager.js";
export { type BackPressureLevel, backPressureLevel } from "./rest/back-pressure-level.js";
export type {
  CheckpointingStatistics,
  CompletedCheckpointStatistics,
} from "./rest/checkpointing-statistics.js";
export type {
  ExceptionHistoryEntry,
  JobExceptionsInfo,
} from "./rest/execution-graph-info.js";
export type {
  BackPressureLevelName,
  IOMetricsInfo,
  JobDetailsInfo,
  JobOverviewInfo,
  PlanInfo,
  PlanInput,
  RatesInfo,
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
export {
  type FetchedSubtask,
  MetricFetcher,
  NO_RATES,
  type SubtaskRates,
} from "./rest/metric-fetcher.js";
export type { JobEvent } from "./rest/rest-routes.js";
export {
  type AnyMetricDump,
  metricValue,
  type SubtaskMetrics,
  subtaskMetrics,
} from "./rest/subtask-metrics.js";
export type { TaskManagerMetric } from "./rest/task-manager-metrics.js";
export { type VertexColour, vertexColour } from "./rest/vertex-colour.js";
export {
  WEB_DASHBOARD_DIR,
  WebMonitorEndpoint,
  type WebMonitorEndpointOptions,
} from "./rest/web-monitor-endpoint.js";
export {
  describeShufflePlugin,
  type ShufflePluginIdentity,
  shufflePluginIdentity,
} from "./shuffle-plugin-identity.js";
export {
  type LocalProcessOutput,
  type ProcessExit,
  SluiceProcess,
  type SluiceProcessOptions,
} from "./sluice-process.js";
export {
  type TaskExecutorGatewayCaller,
  TaskExecutorGatewayMethods,
  type TaskExecutorGatewayReceiver,
} from "./task-executor-gateway-methods.js";
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
