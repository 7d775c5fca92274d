export {
  type DeployOptions,
  JobDeployer,
  type JobDeployerOptions,
  type Placement,
} from "./job-deployer.js";
export {
  type DeploymentOrder,
  type ExecutionVertex,
  JobExecution,
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
export type { JobMasterGateway } from "./job-master-gateway.js";
