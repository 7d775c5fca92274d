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

/**
 * A slot thread of a task manager whose slots run on worker threads
 * (`taskmanager.task-slots.mode: threaded`) could not start (the cause is its start-up error),
 * or ended while it ran tasks without an error of their code (it exited, or was terminated).
 * The message names the slot. Code: `SLUICE_ERR_TASK_SLOT_THREAD`.
 */
export const TaskSlotThreadError = defineError("TaskSlotThreadError", ErrorCodes.TASK_SLOT_THREAD);
export type TaskSlotThreadError = InstanceType<typeof TaskSlotThreadError>;
