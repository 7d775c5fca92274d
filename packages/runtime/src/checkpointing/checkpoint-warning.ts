import { ErrorCodes } from "@sluice/core";

/** The `type` of every warning checkpointing emits through `process.emitWarning`. */
export const CHECKPOINT_WARNING_TYPE = "SluiceCheckpointWarning";

/**
 * Reports a checkpointing problem that has nobody else to tell, or that an operator must see even
 * when the job goes on (a restore that failed and fell back to an older checkpoint, a snapshot
 * that could not be deleted): Flink logs these; Sluice emits a process warning, which Node prints
 * to stderr.
 */
export function emitCheckpointWarning(message: string): void {
  process.emitWarning(message, { type: CHECKPOINT_WARNING_TYPE, code: ErrorCodes.CHECKPOINT });
}
