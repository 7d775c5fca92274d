import { ExecutionAttemptID, JobID } from "@sluice/core";
import { type DescriptorCodec, defineCodec, type JsonFields } from "@sluice/runtime-api";
import type { TaskCheckpointMetrics } from "./checkpoint-metrics.js";
import type { FileStateHandle } from "./file-state-handle.js";

/**
 * A task's acknowledgement of a checkpoint, sent by its TaskExecutor to the job side (Flink's
 * AcknowledgeCheckpoint message): the task took its snapshot, forwarded the barrier, and its
 * snapshot file is written.
 */
export interface AcknowledgeCheckpoint {
  /** The job. */
  readonly jobId: JobID;
  /** The task's execution attempt. */
  readonly executionAttemptId: ExecutionAttemptID;
  /** The checkpoint. */
  readonly checkpointId: bigint;
  /** The task's figures for this checkpoint. */
  readonly metrics: TaskCheckpointMetrics;
  /**
   * Where the snapshot is; absent when the task has no state (it registered no checkpoint
   * handler, or its handler returned `undefined`).
   */
  readonly stateHandle?: FileStateHandle;
}

/** The JSON form (version 1) of {@link AcknowledgeCheckpoint}, for a control plane. */
export interface AcknowledgeCheckpointJSON {
  readonly version: number;
  readonly jobId: string;
  readonly executionAttemptId: string;
  /** Decimal. */
  readonly checkpointId: string;
  readonly metrics: TaskCheckpointMetrics;
  readonly stateHandle?: FileStateHandle;
}

const TYPE_NAME = "AcknowledgeCheckpoint";

/** Parses a decimal checkpoint id (what the JSON forms carry, since ids are 64-bit). */
export function parseCheckpointId(text: string): bigint {
  if (!/^\d{1,19}$/.test(text)) throw new Error(`not a decimal checkpoint id: ${text}`);
  return BigInt(text);
}

/**
 * The ids every checkpoint message of a task carries (its job, its attempt, the checkpoint),
 * read and checked from the message's JSON fields.
 */
export function checkpointMessageIdsOf(
  fields: JsonFields,
): Pick<AcknowledgeCheckpoint, "jobId" | "executionAttemptId" | "checkpointId"> {
  return {
    jobId: fields.id("jobId", "a JobID (32 hex digits)", JobID.fromHex),
    executionAttemptId: fields.id(
      "executionAttemptId",
      "an ExecutionAttemptID (<hex>_<hex>_<subtask>_<attempt>)",
      ExecutionAttemptID.parse,
    ),
    checkpointId: fields.id("checkpointId", "a decimal checkpoint id", parseCheckpointId),
  };
}

function toJSON(ack: AcknowledgeCheckpoint): AcknowledgeCheckpointJSON {
  return {
    version: 1,
    jobId: ack.jobId.toString(),
    executionAttemptId: ack.executionAttemptId.toString(),
    checkpointId: ack.checkpointId.toString(),
    metrics: { ...ack.metrics },
    ...(ack.stateHandle === undefined ? {} : { stateHandle: { ...ack.stateHandle } }),
  };
}

function fromFields(fields: JsonFields): AcknowledgeCheckpoint {
  const metrics = fields.object("metrics");
  const stateHandle = fields.has("stateHandle") ? fields.object("stateHandle") : undefined;
  return {
    ...checkpointMessageIdsOf(fields),
    metrics: {
      alignmentDurationNanos: metrics.integer("alignmentDurationNanos", 0),
      bytesProcessedDuringAlignment: metrics.integer("bytesProcessedDuringAlignment", 0),
      checkpointStartDelayNanos: metrics.integer("checkpointStartDelayNanos", 0),
      syncDurationMillis: metrics.integer("syncDurationMillis", 0),
      asyncDurationMillis: metrics.integer("asyncDurationMillis", 0),
      ...(metrics.has("persistedDataBytes")
        ? { persistedDataBytes: metrics.integer("persistedDataBytes", 0) }
        : {}),
    },
    ...(stateHandle === undefined
      ? {}
      : {
          stateHandle: {
            path: stateHandle.string("path"),
            size: stateHandle.integer("size", 0),
          },
        }),
  };
}

/** JSON codec of {@link AcknowledgeCheckpoint}: what a control plane sends between processes. */
export const AcknowledgeCheckpointCodec: DescriptorCodec<
  AcknowledgeCheckpoint,
  AcknowledgeCheckpointJSON
> = defineCodec(TYPE_NAME, toJSON, fromFields);
