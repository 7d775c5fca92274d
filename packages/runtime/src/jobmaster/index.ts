export * from "./checkpoints/index.js";
export {
  type DeployOptions,
  JobDeployer,
  type JobDeployerOptions,
  type Placement,
  type PlacementContext,
} from "./job-deployer.js";
export {
  type DeploymentOrder,
  type ExecutionVertex,
  type JobCheckpointsSummary,
  JobExecution,
  type JobExecutionOptions,
  type JobResult,
  type JobStatus,
} from "./job-execution.js";
export {
  type ConsumedPartitions,
  consumedPartitionsOf,
  type DataSetConsumerSpec,
  type DistributionPattern,
  type IntermediateDataSet,
  type IntermediateDataSetSpec,
  type JobEdge,
  type JobEdgeSpec,
  JobGraph,
  type JobVertex,
  type JobVertexSpec,
  numberOfSubpartitions,
  partitionIdOf,
} from "./job-graph.js";
export {
  createRestartBackoffTimeStrategy,
  type RestartBackoffTimeStrategy,
} from "./restart-backoff-time-strategy.js";
