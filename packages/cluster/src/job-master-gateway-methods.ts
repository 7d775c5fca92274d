import {
  type ExecutionAttemptID,
  IllegalStateError,
  IntermediateDataSetID,
  JobID,
  ResultPartitionID,
} from "@sluice/core";
import type { SerializedThrowable } from "@sluice/runtime";
import {
  AcknowledgeCheckpointCodec,
  DeclineCheckpointCodec,
  type JobMasterGateway,
  taskExecutionStateFromJSON,
  taskExecutionStateToJSON,
} from "@sluice/runtime/plugin";
import type { ExecutionState, JsonValue } from "@sluice/runtime-api";
import * as z from "zod";
import { type ForwardingTable, forwardedMethods } from "./gateway-forwarding.js";
import { executionState, json, serializedThrowable, text } from "./wire-schemas.js";

/** What the job manager acts on when a task manager calls the JobMasterGateway of a job. */
export interface JobMasterGatewayReceiver {
  /**
   * The job master of `jobId`'s tasks on the calling task manager.
   *
   * @throws IllegalStateError when no task of that job was submitted to it.
   */
  jobMasterOf(jobId: JobID): JobMasterGateway;
  /**
   * The job master a report (`what`) about attempt `attemptId` of `jobId` goes to, once it is
   * checked that the attempt is deployed to the calling task manager and has not ended.
   *
   * @throws IllegalStateError when it is not (the report is refused and never reaches the job).
   */
  reporterFor(jobId: JobID, attemptId: ExecutionAttemptID, what: string): JobMasterGateway;
  /**
   * Attempt `attemptId`'s report of `state` was accepted: once RUNNING its deployment is done;
   * once final, nothing more is accepted about it.
   */
  attemptReported(attemptId: ExecutionAttemptID, state: ExecutionState): void;
}

/** A task manager's side of a forwarded JobMasterGateway call needs nothing besides sending. */
export type JobMasterGatewayCaller = Readonly<Record<string, never>>;

/** A task's partitions and gates are few; a longer list in a report is refused. */
const MAX_SERIALIZERS = 1024;

const method = forwardedMethods<
  JobMasterGateway,
  JobMasterGatewayCaller,
  JobMasterGatewayReceiver
>().method;

/**
 * The runtime's `JobMasterGateway` over the control plane (a task manager's tasks call, the job
 * manager answers for the job they belong to). Task states travel as the runtime's JSON form,
 * errors as `SerializedThrowable` (their codes survive), ids as strings, checkpoint messages as
 * their versioned JSON codecs (which check every field on receipt). Every method is a report over
 * the one connection of a task manager, so they arrive in the order its tasks sent them: a task's
 * acknowledgement of a checkpoint before its FINISHED state, as the job side requires.
 */
export const JobMasterGatewayMethods = {
  /** A task changed state; a FINISHED report carries what its invokable returned. */
  updateTaskExecutionState: method("updateTaskExecutionState", {
    delivery: "report",
    params: z.object({
      jobId: text(64),
      executionAttemptId: text(256),
      state: executionState,
      error: serializedThrowable.optional(),
      result: json.optional(),
      serializers: z
        .object({
          produced: z.array(text(1024)).max(MAX_SERIALIZERS).readonly(),
          consumed: z.array(text(1024)).max(MAX_SERIALIZERS).readonly(),
        })
        .optional(),
    }),
    result: z.null(),
    encode: ([update]) => taskExecutionStateToJSON(update),
    invoke: (job, params) => {
      const update = taskExecutionStateFromJSON({
        jobId: params.jobId,
        executionAttemptId: params.executionAttemptId,
        state: params.state,
        ...(params.error === undefined ? {} : { error: params.error as SerializedThrowable }),
        ...(params.result === undefined ? {} : { result: params.result }),
        ...(params.serializers === undefined ? {} : { serializers: params.serializers }),
      });
      job
        .reporterFor(update.jobId, update.executionAttemptId, `the state ${update.state}`)
        .updateTaskExecutionState(update);
      job.attemptReported(update.executionAttemptId, update.state);
    },
  }),
  /** A consumer asks for the state of a partition's producer. */
  requestPartitionProducerState: method("requestPartitionProducerState", {
    params: z.object({ jobId: text(64), resultId: text(64), partitionId: text(512) }),
    result: z.object({ state: executionState }),
    encode: ([jobId, resultId, partitionId]) => ({
      jobId: jobId.toString(),
      resultId: resultId.toString(),
      partitionId: partitionId.toString(),
    }),
    invoke: async (job, params) => {
      const jobId = JobID.fromHex(params.jobId);
      const state = await job
        .jobMasterOf(jobId)
        .requestPartitionProducerState(
          jobId,
          IntermediateDataSetID.fromHex(params.resultId),
          ResultPartitionID.parse(params.partitionId),
        );
      return { state };
    },
    decode: ({ state }) => state,
  }),
  /** A task took its part of a checkpoint; its snapshot file is written. */
  acknowledgeCheckpoint: method("acknowledgeCheckpoint", {
    delivery: "report",
    params: z.object({ acknowledgement: json }),
    result: z.null(),
    encode: ([ack]) => ({
      acknowledgement: AcknowledgeCheckpointCodec.toJSON(ack) as unknown as JsonValue,
    }),
    invoke: (job, { acknowledgement }) => {
      const ack = AcknowledgeCheckpointCodec.fromJSON(acknowledgement);
      checkpointingJobMaster(
        job,
        ack.jobId,
        ack.executionAttemptId,
        "acknowledgeCheckpoint",
      ).acknowledgeCheckpoint(ack);
    },
  }),
  /** A task will not take part in a checkpoint: the job side aborts it. */
  declineCheckpoint: method("declineCheckpoint", {
    delivery: "report",
    params: z.object({ decline: json }),
    result: z.null(),
    encode: ([decline]) => ({
      decline: DeclineCheckpointCodec.toJSON(decline) as unknown as JsonValue,
    }),
    invoke: (job, params) => {
      const decline = DeclineCheckpointCodec.fromJSON(params.decline);
      checkpointingJobMaster(
        job,
        decline.jobId,
        decline.executionAttemptId,
        "declineCheckpoint",
      ).declineCheckpoint(decline);
    },
  }),
} as const satisfies ForwardingTable<
  JobMasterGateway,
  JobMasterGatewayCaller,
  JobMasterGatewayReceiver
>;

/**
 * The job master of `jobId`, which must take checkpoint messages (a `JobExecution` does), for a
 * message of `attemptId`, which must be deployed to the calling task manager.
 *
 * @throws IllegalStateError when it does not, or the attempt is not the caller's.
 */
function checkpointingJobMaster(
  job: JobMasterGatewayReceiver,
  jobId: JobID,
  attemptId: ExecutionAttemptID,
  method: "acknowledgeCheckpoint" | "declineCheckpoint",
): Required<Pick<JobMasterGateway, "acknowledgeCheckpoint" | "declineCheckpoint">> {
  const jobMaster = job.reporterFor(jobId, attemptId, `a ${method}`);
  if (jobMaster.acknowledgeCheckpoint === undefined || jobMaster.declineCheckpoint === undefined) {
    throw new IllegalStateError(
      `${method} for job ${jobId}: its job master takes no checkpoint messages`,
    );
  }
  return jobMaster as Required<
    Pick<JobMasterGateway, "acknowledgeCheckpoint" | "declineCheckpoint">
  >;
}
