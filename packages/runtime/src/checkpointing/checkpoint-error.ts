import { defineError, ErrorCodes } from "@sluice/core";

/**
 * A checkpoint failed, or a task's snapshot could not be taken, written or restored (Flink's
 * CheckpointException). The message names the task, the checkpoint and the file; the `cause`
 * is the underlying error. Code: `SLUICE_ERR_CHECKPOINT`.
 */
export const CheckpointError = defineError("CheckpointError", ErrorCodes.CHECKPOINT);
export type CheckpointError = InstanceType<typeof CheckpointError>;
