import { ExecutionAttemptID, JobID, ResultPartitionID } from "@sluice/core";
import {
  CheckpointTriggerOptionsCodec,
  type JobMasterGateway,
  parseCheckpointId,
  SNAPSHOT_TYPE_NAMES,
  TaskDeploymentDescriptorCodec,
  type TaskExecutorGateway,
} from "@sluice/runtime/plugin";
import { type JsonValue, PartitionInfoCodec } from "@sluice/runtime-api";
import * as z from "zod";
import {
  type ForwardingTable,
  forwardedMethods,
  type GatewayMethods,
} from "./gateway-forwarding.js";
import { json, text, uint64 } from "./wire-schemas.js";

/** What the job manager's side of a forwarded TaskExecutorGateway call may do besides sending. */
export interface TaskExecutorGatewayCaller {
  /** The tasks of `jobId` on this task manager report to `jobMaster` from now on. */
  routeJobMaster(jobId: JobID, jobMaster: JobMasterGateway): void;
  /**
   * Attempt `attemptId` of job `jobId` is being deployed to this task manager: from now on it, and
   * only it, may report that attempt's state and checkpoints.
   */
  deployAttempt(jobId: JobID, attemptId: ExecutionAttemptID): void;
}

/** What a task manager acts on when the job manager calls its TaskExecutorGateway. */
export interface TaskExecutorGatewayReceiver {
  /**
   * The task manager's TaskExecutor (every method, `triggerCheckpoint` and the checkpoint
   * notifications included).
   */
  readonly executor: GatewayMethods<TaskExecutorGateway>;
  /** Where its tasks report: the job manager, over the same connection. */
  readonly jobMaster: JobMasterGateway;
}

/**
 * The wire shape that `triggerCheckpoint` and `notifyCheckpointComplete` share: which attempt,
 * which checkpoint, and the checkpoint's timestamp (64-bit values travel as decimal strings).
 */
const attemptCheckpointParams = z.object({
  executionAttemptId: text(256),
  checkpointId: uint64,
  timestamp: uint64,
});

type AttemptCheckpointParams = z.infer<typeof attemptCheckpointParams>;

function encodeAttemptCheckpoint([executionAttemptId, id, timestamp]: readonly [
  { toString(): string },
  { toString(): string },
  { toString(): string },
]): AttemptCheckpointParams {
  return {
    executionAttemptId: executionAttemptId.toString(),
    checkpointId: id.toString(),
    timestamp: timestamp.toString(),
  };
}

function decodeAttemptCheckpoint(params: AttemptCheckpointParams) {
  return [
    ExecutionAttemptID.parse(params.executionAttemptId),
    parseCheckpointId(params.checkpointId),
    BigInt(params.timestamp),
  ] as const;
}

const method = forwardedMethods<
  TaskExecutorGateway,
  TaskExecutorGatewayCaller,
  TaskExecutorGatewayReceiver
>().method;

/**
 * The runtime's `TaskExecutorGateway` over the control plane (the job manager calls, a task
 * manager answers). Descriptors and partition infos travel as their versioned JSON codecs, which
 * check every field on receipt and name a bad one (`SLUICE_ERR_DESCRIPTOR` in the error reply);
 * ids travel as strings, checkpoint ids and timestamps as decimal strings (they are 64-bit).
 */
export const TaskExecutorGatewayMethods = {
  /** Deploys a task and runs its invokable; its state reports go back over the same connection. */
  submitTask: method("submitTask", {
    params: z.object({ descriptor: json }),
    result: z.null(),
    encode: ([descriptor, jobMaster], caller) => {
      caller.routeJobMaster(descriptor.jobId, jobMaster);
      caller.deployAttempt(descriptor.jobId, descriptor.executionAttemptId);
      return { descriptor: TaskDeploymentDescriptorCodec.toJSON(descriptor) };
    },
    invoke: ({ executor, jobMaster }, { descriptor }) =>
      executor.submitTask(TaskDeploymentDescriptorCodec.fromJSON(descriptor), jobMaster),
  }),
  cancelTask: method("cancelTask", {
    params: z.object({ executionAttemptId: text(256) }),
    result: z.null(),
    encode: ([executionAttemptId]) => ({ executionAttemptId: executionAttemptId.toString() }),
    invoke: ({ executor }, { executionAttemptId }) =>
      executor.cancelTask(ExecutionAttemptID.parse(executionAttemptId)),
  }),
  updatePartitions: method("updatePartitions", {
    params: z.object({ executionAttemptId: text(256), partitionInfos: z.array(json).max(65536) }),
    result: z.null(),
    encode: ([executionAttemptId, partitionInfos]) => ({
      executionAttemptId: executionAttemptId.toString(),
      partitionInfos: partitionInfos.map((info) => PartitionInfoCodec.toJSON(info)),
    }),
    invoke: ({ executor }, { executionAttemptId, partitionInfos }) =>
      executor.updatePartitions(
        ExecutionAttemptID.parse(executionAttemptId),
        partitionInfos.map((info) => PartitionInfoCodec.fromJSON(info)),
      ),
  }),
  releasePartitions: method("releasePartitions", {
    params: z.object({ jobId: text(64), partitionIds: z.array(text(512)).max(65536) }),
    result: z.null(),
    encode: ([jobId, partitionIds]) => ({
      jobId: jobId.toString(),
      partitionIds: partitionIds.map((id) => id.toString()),
    }),
    invoke: ({ executor }, { jobId, partitionIds }) =>
      executor.releasePartitions(
        JobID.fromHex(jobId),
        partitionIds.map((id) => ResultPartitionID.parse(id)),
      ),
  }),
  /**
   * Triggers a checkpoint at a source task: resolves once the trigger is queued there; the
   * task's acknowledgement or decline comes back as a JobMasterGateway call.
   */
  triggerCheckpoint: method("triggerCheckpoint", {
    // A savepoint's trigger names its type and folder (Flink's CheckpointOptions); a
    // checkpoint's carries neither, as before.
    params: attemptCheckpointParams.extend({
      snapshotType: z.enum(SNAPSHOT_TYPE_NAMES).optional(),
      targetLocation: text(4096).optional(),
    }),
    result: z.null(),
    encode: ([attempt, id, timestamp, options]) => ({
      ...encodeAttemptCheckpoint([attempt, id, timestamp]),
      ...CheckpointTriggerOptionsCodec.toJSON(options),
    }),
    invoke: ({ executor }, params) => {
      const options = CheckpointTriggerOptionsCodec.fromJSON(params);
      return options === undefined
        ? executor.triggerCheckpoint(...decodeAttemptCheckpoint(params))
        : executor.triggerCheckpoint(...decodeAttemptCheckpoint(params), options);
    },
  }),
  /**
   * Tells a task that a checkpoint completed, and which one it subsumed if any: resolves once
   * the notifications are queued.
   */
  notifyCheckpointComplete: method("notifyCheckpointComplete", {
    params: attemptCheckpointParams.extend({ lastSubsumedCheckpointId: uint64.optional() }),
    result: z.null(),
    encode: ([attempt, id, timestamp, lastSubsumed]) => ({
      ...encodeAttemptCheckpoint([attempt, id, timestamp]),
      ...(lastSubsumed === undefined ? {} : { lastSubsumedCheckpointId: lastSubsumed.toString() }),
    }),
    invoke: ({ executor }, params) =>
      executor.notifyCheckpointComplete(
        ...decodeAttemptCheckpoint(params),
        params.lastSubsumedCheckpointId === undefined
          ? undefined
          : parseCheckpointId(params.lastSubsumedCheckpointId),
      ),
  }),
  /** Tells a task that a checkpoint was aborted: resolves once the notification is queued. */
  notifyCheckpointAborted: method("notifyCheckpointAborted", {
    params: z.object({
      executionAttemptId: text(256),
      checkpointId: uint64,
      latestCompletedCheckpointId: uint64,
    }),
    result: z.null(),
    encode: ([executionAttemptId, id, latest]) => ({
      executionAttemptId: executionAttemptId.toString(),
      checkpointId: id.toString(),
      latestCompletedCheckpointId: latest.toString(),
    }),
    invoke: ({ executor }, params) =>
      executor.notifyCheckpointAborted(
        ExecutionAttemptID.parse(params.executionAttemptId),
        parseCheckpointId(params.checkpointId),
        parseCheckpointId(params.latestCompletedCheckpointId),
      ),
  }),
  /**
   * A job message for the job's user code on the task manager (`POST /jobs/:jobid/messages/:name`
   * on the REST endpoint); the reply is the handler's. The task manager refuses it unless a task
   * of the job runs there.
   */
  deliverJobMessage: method("deliverJobMessage", {
    params: z.object({ jobId: text(64), name: text(256), payload: json }),
    result: json,
    encode: ([jobId, name, payload]) => ({ jobId: jobId.toString(), name, payload }),
    invoke: ({ executor }, { jobId, name, payload }) =>
      executor.deliverJobMessage(JobID.fromHex(jobId), name, payload as JsonValue),
    decode: (reply) => reply as JsonValue,
  }),
  /**
   * The names the task manager resolves for a job module (loaded from its own host) or, without
   * one, for the code it was started with.
   */
  userCodeNames: method("userCodeNames", {
    params: z.object({ reference: text(4096).optional() }),
    result: z.object({
      invokables: z.array(text(256)).max(65536),
      serializers: z.array(text(256)).max(65536),
      keySelectors: z.array(text(256)).max(65536),
      partitioners: z.array(text(256)).max(65536),
    }),
    encode: ([reference]) => (reference === undefined ? {} : { reference }),
    invoke: async ({ executor }, { reference }) => {
      const names = await executor.userCodeNames(reference);
      return {
        invokables: [...names.invokables],
        serializers: [...names.serializers],
        keySelectors: [...names.keySelectors],
        partitioners: [...names.partitioners],
      };
    },
    decode: (names) => names,
  }),
} as const satisfies ForwardingTable<
  TaskExecutorGateway,
  TaskExecutorGatewayCaller,
  TaskExecutorGatewayReceiver
>;
