import type { ExecutionAttemptID, JobID } from "@sluice/core";
import { type DescriptorCodec, defineCodec, type JsonFields } from "@sluice/runtime-api";
import { checkpointMessageIdsOf } from "./acknowledge-checkpoint.js";
import {
  CHECKPOINT_FAILURE_REASONS,
  type CheckpointFailureReason,
} from "./checkpoint-failure-reason.js";
import type { SerializedThrowable } from "./serialized-throwable.js";

/**
 * A task's refusal of a checkpoint, sent by its TaskExecutor to the job side (Flink's
 * DeclineCheckpoint message): the checkpoint cannot complete at this task. The job side aborts
 * it.
 */
export interface DeclineCheckpoint {
  /** The job. */
  readonly jobId: JobID;
  /** The task's execution attempt. */
  readonly executionAttemptId: ExecutionAttemptID;
  /** The checkpoint. */
  readonly checkpointId: bigint;
  /** Why. */
  readonly reason: CheckpointFailureReason;
  /** The error behind it, when there is one (a snapshot that threw, a file not written). */
  readonly error?: SerializedThrowable;
}

/** The JSON form (version 1) of {@link DeclineCheckpoint}, for a control plane. */
export interface DeclineCheckpointJSON {
  readonly version: number;
  readonly jobId: string;
  readonly executionAttemptId: string;
  /** Decimal. */
  readonly checkpointId: string;
  readonly reason: CheckpointFailureReason;
  readonly error?: SerializedThrowable;
}

const TYPE_NAME = "DeclineCheckpoint";

function toJSON(decline: DeclineCheckpoint): DeclineCheckpointJSON {
  return {
    version: 1,
    jobId: decline.jobId.toString(),
    executionAttemptId: decline.executionAttemptId.toString(),
    checkpointId: decline.checkpointId.toString(),
    reason: decline.reason,
    ...(decline.error === undefined ? {} : { error: { ...decline.error } }),
  };
}

function fromFields(fields: JsonFields): DeclineCheckpoint {
  const reason = fields.string("reason");
  if (!(CHECKPOINT_FAILURE_REASONS as readonly string[]).includes(reason)) {
    fields.fail("reason", `must be one of ${CHECKPOINT_FAILURE_REASONS.join(", ")}`, reason);
  }
  let error: SerializedThrowable | undefined;
  if (fields.has("error")) {
    const e = fields.object("error");
    error = {
      name: e.string("name"),
      message: e.string("message"),
      ...(e.has("code") ? { code: e.string("code") } : {}),
      ...(e.has("stack") ? { stack: e.string("stack") } : {}),
    };
  }
  return {
    ...checkpointMessageIdsOf(fields),
    reason: reason as CheckpointFailureReason,
    ...(error === undefined ? {} : { error }),
  };
}

/** JSON codec of {@link DeclineCheckpoint}: what a control plane sends between processes. */
export const DeclineCheckpointCodec: DescriptorCodec<DeclineCheckpoint, DeclineCheckpointJSON> =
  defineCodec(TYPE_NAME, toJSON, fromFields);
