export { AbstractId } from "./abstract-id.js";
export {
  ExecutionAttemptID,
  ExecutionGraphID,
  InputChannelID,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  JobID,
  JobVertexID,
  ResourceID,
  ResultPartitionID,
} from "./ids.js";
