import { defineError, ErrorCodes } from "@sluice/core";

/**
 * A task deployment descriptor names code or types the TaskExecutor does not know. The message
 * names the task, the field and the names that are known. Code: `SLUICE_ERR_TASK_DEPLOYMENT`.
 */
export const TaskDeploymentError = defineError("TaskDeploymentError", ErrorCodes.TASK_DEPLOYMENT);
export type TaskDeploymentError = InstanceType<typeof TaskDeploymentError>;

/**
 * A TaskExecutor runs no task with the given execution attempt (it ended, or was never deployed
 * there; Flink's `TaskNotFoundException`). Code: `SLUICE_ERR_TASK_NOT_FOUND`.
 */
export const TaskNotFoundError = defineError("TaskNotFoundError", ErrorCodes.TASK_NOT_FOUND);
export type TaskNotFoundError = InstanceType<typeof TaskNotFoundError>;
