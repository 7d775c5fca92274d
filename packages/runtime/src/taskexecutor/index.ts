export { TaskDeploymentError, TaskNotFoundError, TaskSlotThreadError } from "./errors.js";
export { type ListenTarget, listenError } from "./listen-error.js";
export { deriveNetworkMemorySize, type NetworkMemorySize } from "./network-memory.js";
export type { RunningTask } from "./running-task.js";
export { Task } from "./task.js";
export {
  TASK_WARNING_TYPE,
  TaskExecutor,
  type TaskExecutorOptions,
  type TaskSlotExecutorSpec,
} from "./task-executor.js";
export {
  type PartitionReleaser,
  type TaskExecutorPartitionInfo,
  TaskExecutorPartitionTracker,
} from "./task-executor-partition-tracker.js";
export { type Mail, TaskMailbox } from "./task-mailbox.js";
export {
  BUILT_IN_SERIALIZERS,
  IDENTITY_KEY_SELECTOR,
  type JobMessageContext,
  type JobMessageHandler,
  type TaskInvokable,
  type UserCode,
} from "./user-code-registry.js";
