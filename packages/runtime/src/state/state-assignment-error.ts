import { defineError, ErrorCodes } from "@sluice/core";

/**
 * A restore from a savepoint or retained checkpoint cannot assign the job's state to its
 * subtasks (Flink's `StateAssignmentOperation` refusing): a vertex's max parallelism changed, the
 * state of a vertex is not in the new job, or a vertex restored at another parallelism holds
 * state that cannot be redistributed (neither keyed state nor operator list state, the channel
 * state of an unaligned checkpoint, subtasks that had finished while others had not). The
 * message names the vertex and the state. Every attempt would meet it again, so the job fails
 * without a restart. Code: `SLUICE_ERR_STATE_ASSIGNMENT`.
 */
export const StateAssignmentError = defineError(
  "StateAssignmentError",
  ErrorCodes.STATE_ASSIGNMENT,
);
/** An instance of {@link StateAssignmentError}. */
export type StateAssignmentError = InstanceType<typeof StateAssignmentError>;
