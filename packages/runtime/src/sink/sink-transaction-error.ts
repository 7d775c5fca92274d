import { defineError, ErrorCodes } from "@sluice/core";

/**
 * A two-phase-commit sink could not pre-commit, commit or abort a transaction: a part file
 * could not be written, synced or renamed, or a restored checkpoint names a pre-committed file
 * that is gone. The message names the task, the transaction and the file; the `cause` is the
 * file system's error. Code: `SLUICE_ERR_SINK_TRANSACTION`.
 */
export const SinkTransactionError = defineError(
  "SinkTransactionError",
  ErrorCodes.SINK_TRANSACTION,
);
export type SinkTransactionError = InstanceType<typeof SinkTransactionError>;
