export * from "./checkpoints/index.js";
export type { ExecutionVertex } from "./execution-vertex.js";
export { type DeployOptions, JobDeployer, type JobDeployerOptions } from "./job-deployer.js";
export { JobExecution } from "./job-execution.js";
export type { JobExecutionOptions } from "./job-execution-options.js";
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
export { JobGraphCodec, type JobGraphJSON } from "./job-graph-codec.js";
export {
  defineJob,
  isJobModule,
  type JobModule,
  type JobModuleContext,
  type LoadedJobModule,
  loadJobModule,
} from "./job-module.js";
export type { JobCheckpointsSummary, JobResult } from "./job-result.js";
export { isGloballyTerminal, type JobStatus, type JobStatusListener } from "./job-status.js";
export type { DeploymentOrder } from "./pipelined-region-scheduling-strategy.js";
export type { Placement, PlacementContext } from "./placement.js";
export {
  createRestartBackoffTimeStrategy,
  type RestartBackoffTimeStrategy,
} from "./restart-backoff-time-strategy.js";
export { checkShuffleMemoryFits, type ShuffleMemoryHolder } from "./shuffle-memory-check.js";
export { checkUserCode, userCodeNamesNeeded } from "./user-code-check.js";
