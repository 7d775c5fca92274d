export { TaskDeploymentError, TaskNotFoundError } from "./errors.js";
export { type ListenTarget, listenError } from "./listen-error.js";
export { deriveNetworkMemorySize, type NetworkMemorySize } from "./network-memory.js";
export {
  describeThrowable,
  deserializeThrowable,
  type SerializedThrowable,
  serializeThrowable,
} from "./serialized-throwable.js";
export { Task } from "./task.js";
export {
  createTaskDeploymentDescriptor,
  type InputGateSpec,
  type PartitionerSpec,
  type ProducedPartitionSpec,
  type TaskDeploymentDescriptor,
  TaskDeploymentDescriptorCodec,
  type TaskDeploymentDescriptorJSON,
  type TaskRestoreSpec,
  type TaskRestoreSpecJSON,
  taskNameWithSubtask,
} from "./task-deployment-descriptor.js";
export {
  failureOf,
  type TaskExecutionState,
  type TaskExecutionStateJSON,
  type TaskSerializers,
  taskExecutionStateFromJSON,
  taskExecutionStateToJSON,
} from "./task-execution-state.js";
export { TaskExecutor, type TaskExecutorOptions } from "./task-executor.js";
export type { TaskExecutorGateway, TaskManagerLocation } from "./task-executor-gateway.js";
export { type Mail, TaskMailbox } from "./task-mailbox.js";
export {
  BUILT_IN_SERIALIZERS,
  IDENTITY_KEY_SELECTOR,
  type TaskInvokable,
  type UserCode,
} from "./user-code-registry.js";
