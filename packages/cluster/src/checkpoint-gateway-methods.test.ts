/**
 * The checkpoint methods of the runtime's gateways over the control plane's forwarding tables:
 * `triggerCheckpoint` (job manager → task manager) and `acknowledgeCheckpoint` /
 * `declineCheckpoint` (task manager → job manager), both ends in one process with every message
 * checked against its schema and carried as JSON, as the control plane carries it.
 */
import { ErrorCodes, ExecutionAttemptID, IllegalStateError, JobID } from "@sluice/core";
import { expectRejection, expectSluiceError, must } from "@sluice/core/testing";
import {
  type AcknowledgeCheckpoint,
  CheckpointFailureReason,
  type DeclineCheckpoint,
  type JobMasterGateway,
  serializeThrowable,
  type TaskExecutorGateway,
} from "@sluice/runtime/plugin";
import { DescriptorError } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { forwardingGateway, type GatewayMethods } from "./gateway-forwarding.js";
import {
  type TaskExecutorGatewayCaller,
  TaskExecutorGatewayMethods,
  type TaskExecutorGatewayReceiver,
} from "./task-executor-gateway-methods.js";
import { forwardJobMaster } from "./test-support/forwarded-job-master.js";
import { inProcessForwarder } from "./test-support/in-process-forwarder.js";

class ForwardedTaskExecutor extends forwardingGateway<
  TaskExecutorGateway,
  TaskExecutorGatewayCaller
>(TaskExecutorGatewayMethods) {}

/** The largest checkpoint id: beyond what a JSON number carries exactly. */
const MAX_ID = 2n ** 63n - 1n;

function recordingExecutor(triggered: unknown[][]): GatewayMethods<TaskExecutorGateway> {
  const unused = () => Promise.reject(new Error("not used here"));
  return {
    submitTask: unused,
    cancelTask: unused,
    updatePartitions: unused,
    releasePartitions: unused,
    deliverJobMessage: unused,
    userCodeNames: unused,
    triggerCheckpoint: async (...args) => {
      triggered.push(args);
    },
    notifyCheckpointComplete: async (...args) => {
      triggered.push(["complete", ...args]);
    },
    notifyCheckpointAborted: async (...args) => {
      triggered.push(["aborted", ...args]);
    },
  };
}

function forwardTaskExecutor(triggered: unknown[][]) {
  const receiver: TaskExecutorGatewayReceiver = {
    executor: recordingExecutor(triggered),
    jobMaster: {} as JobMasterGateway,
  };
  const { forwarder } = inProcessForwarder(TaskExecutorGatewayMethods, receiver, {
    routeJobMaster: () => {},
    deployAttempt: () => {},
  });
  return { remote: new ForwardedTaskExecutor(forwarder), forwarder };
}

/** Lets the reports' replies settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("checkpoint triggers over the control plane", () => {
  it("reach the task manager's TaskExecutor with 64-bit checkpoint ids and timestamps intact", async () => {
    const triggered: unknown[][] = [];
    const { remote } = forwardTaskExecutor(triggered);
    const attempt = new ExecutionAttemptID(undefined, undefined, 3, 2);
    await remote.triggerCheckpoint(attempt, MAX_ID, 1_733_000_000_123n);
    expect(triggered).toHaveLength(1);
    const [id, checkpointId, timestamp] = must(triggered[0]);
    expect((id as ExecutionAttemptID).equals(attempt)).toBe(true);
    expect(checkpointId).toBe(MAX_ID);
    expect(timestamp).toBe(1_733_000_000_123n);
  });

  it("are refused on receipt when the checkpoint id is not a decimal 64-bit integer", async () => {
    const triggered: unknown[][] = [];
    const { forwarder } = forwardTaskExecutor(triggered);
    const attempt = new ExecutionAttemptID().toString();
    for (const bad of ["-1", "1e3", "12345678901234567890", ""]) {
      await expect(
        forwarder.request("triggerCheckpoint", {
          executionAttemptId: attempt,
          checkpointId: bad,
          timestamp: "1",
        }),
      ).rejects.toThrow(/checkpointId/);
    }
    expect(triggered).toEqual([]);
  });

  it("reject with the TaskExecutor's error (a task that is not a source)", async () => {
    const receiverError = new IllegalStateError("Count (1/2)#0 is not a source");
    const executor: TaskExecutorGatewayReceiver = {
      executor: {
        ...recordingExecutor([]),
        triggerCheckpoint: () => Promise.reject(receiverError),
      },
      jobMaster: {} as JobMasterGateway,
    };
    const { forwarder } = inProcessForwarder(TaskExecutorGatewayMethods, executor, {
      routeJobMaster: () => {},
      deployAttempt: () => {},
    });
    const failing = new ForwardedTaskExecutor(forwarder);
    await expectRejection(
      failing.triggerCheckpoint(new ExecutionAttemptID(), 1n, 1n),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
      "is not a source",
    );
  });
});

describe("checkpoint notifications over the control plane", () => {
  it("reach the task manager's TaskExecutor with 64-bit ids intact, completion and abort alike", async () => {
    const received: unknown[][] = [];
    const { remote } = forwardTaskExecutor(received);
    const attempt = new ExecutionAttemptID(undefined, undefined, 1, 0);
    await remote.notifyCheckpointComplete(attempt, MAX_ID, 1_733_000_000_123n);
    await remote.notifyCheckpointAborted(attempt, 7n, 0n);
    expect(received).toHaveLength(2);
    const [kind, id, checkpointId, timestamp] = must(received[0]);
    expect(kind).toBe("complete");
    expect((id as ExecutionAttemptID).equals(attempt)).toBe(true);
    expect([checkpointId, timestamp]).toEqual([MAX_ID, 1_733_000_000_123n]);
    const [abortKind, , abortedId, latest] = must(received[1]);
    expect([abortKind, abortedId, latest]).toEqual(["aborted", 7n, 0n]);
  });

  it("carry the completed checkpoint a completion subsumed, 64-bit intact, and none when there is none", async () => {
    const received: unknown[][] = [];
    const { remote } = forwardTaskExecutor(received);
    const attempt = new ExecutionAttemptID(undefined, undefined, 1, 0);
    await remote.notifyCheckpointComplete(attempt, MAX_ID, 1n, MAX_ID - 1n);
    await remote.notifyCheckpointComplete(attempt, 9n, 1n);
    expect(must(received[0]).slice(2)).toEqual([MAX_ID, 1n, MAX_ID - 1n]);
    expect(must(received[1]).slice(2)).toEqual([9n, 1n, undefined]);
  });

  it("are refused on receipt when an id is not a decimal 64-bit integer", async () => {
    const received: unknown[][] = [];
    const { forwarder } = forwardTaskExecutor(received);
    const attempt = new ExecutionAttemptID().toString();
    await expect(
      forwarder.request("notifyCheckpointComplete", {
        executionAttemptId: attempt,
        checkpointId: "-1",
        timestamp: "1",
      }),
    ).rejects.toThrow(/checkpointId/);
    await expect(
      forwarder.request("notifyCheckpointAborted", {
        executionAttemptId: attempt,
        checkpointId: "2",
        latestCompletedCheckpointId: "x",
      }),
    ).rejects.toThrow(/latestCompletedCheckpointId/);
    expect(received).toEqual([]);
  });
});

describe("checkpoint acknowledgements and declines over the control plane", () => {
  const jobId = new JobID();
  const attempt = new ExecutionAttemptID(undefined, undefined, 1, 4);
  const ack: AcknowledgeCheckpoint = {
    jobId,
    executionAttemptId: attempt,
    checkpointId: MAX_ID,
    metrics: {
      alignmentDurationNanos: 1_500_000,
      bytesProcessedDuringAlignment: 32_768,
      checkpointStartDelayNanos: 2_000_000,
      syncDurationMillis: 1,
      asyncDurationMillis: 3,
    },
    stateHandle: { path: "/tmp/sluice-checkpoints/job/chk-7/task.json", size: 120 },
  };

  it("reach the job master of the task's job, every field intact, in the order they were sent", async () => {
    const received: (AcknowledgeCheckpoint | DeclineCheckpoint)[] = [];
    const jobMaster: JobMasterGateway = {
      updateTaskExecutionState: () => {},
      requestPartitionProducerState: () => Promise.reject(new Error("not used here")),
      acknowledgeCheckpoint: (message) => received.push(message),
      declineCheckpoint: (message) => received.push(message),
    };
    const { remote, undelivered } = forwardJobMaster(jobMaster, jobId);
    const decline: DeclineCheckpoint = {
      jobId,
      executionAttemptId: attempt,
      checkpointId: 8n,
      reason: CheckpointFailureReason.CHECKPOINT_DECLINED,
      error: serializeThrowable(new IllegalStateError("snapshot broke")),
    };
    expect(remote.acknowledgeCheckpoint(ack)).toBeUndefined();
    expect(remote.declineCheckpoint(decline)).toBeUndefined();
    await settle();
    expect(undelivered).toEqual([]);
    expect(received).toHaveLength(2);
    const [gotAck, gotDecline] = received as [AcknowledgeCheckpoint, DeclineCheckpoint];
    expect(gotAck.jobId.equals(jobId)).toBe(true);
    expect(gotAck.executionAttemptId.equals(attempt)).toBe(true);
    expect(gotAck.checkpointId).toBe(MAX_ID);
    expect(gotAck.metrics).toEqual(ack.metrics);
    expect(gotAck.stateHandle).toEqual(ack.stateHandle);
    expect(gotDecline.checkpointId).toBe(8n);
    expect(gotDecline.reason).toBe(CheckpointFailureReason.CHECKPOINT_DECLINED);
    expect(gotDecline.error).toMatchObject({
      code: ErrorCodes.ILLEGAL_STATE,
      message: "snapshot broke",
    });
  });

  it("go to onUndelivered, never thrown, when the job master takes no checkpoint messages or the job is unknown", async () => {
    const withoutCheckpoints: JobMasterGateway = {
      updateTaskExecutionState: () => {},
      requestPartitionProducerState: () => Promise.reject(new Error("not used here")),
    };
    const { remote, undelivered } = forwardJobMaster(withoutCheckpoints, jobId);
    expect(remote.acknowledgeCheckpoint(ack)).toBeUndefined();
    expect(remote.acknowledgeCheckpoint({ ...ack, jobId: new JobID() })).toBeUndefined();
    await settle();
    expect(undelivered.map(([method]) => method)).toEqual([
      "acknowledgeCheckpoint",
      "acknowledgeCheckpoint",
    ]);
    expectSluiceError(
      must(undelivered[0])[1],
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
      "takes no checkpoint messages",
    );
    expectSluiceError(must(undelivered[1])[1], IllegalStateError, ErrorCodes.ILLEGAL_STATE);
  });

  it("are refused on receipt, naming the field, when malformed", async () => {
    const received: unknown[] = [];
    const jobMaster: JobMasterGateway = {
      updateTaskExecutionState: () => {},
      requestPartitionProducerState: () => Promise.reject(new Error("not used here")),
      acknowledgeCheckpoint: (message) => received.push(message),
      declineCheckpoint: (message) => received.push(message),
    };
    const { forwarder } = forwardJobMaster(jobMaster, jobId);
    await expectRejection(
      forwarder.request("acknowledgeCheckpoint", {
        acknowledgement: {
          version: 1,
          jobId: jobId.toString(),
          executionAttemptId: attempt.toString(),
          checkpointId: "seven",
          metrics: ack.metrics,
        },
      }),
      DescriptorError,
      ErrorCodes.DESCRIPTOR,
      "checkpointId",
    );
    await expectRejection(
      forwarder.request("declineCheckpoint", {
        decline: {
          version: 1,
          jobId: jobId.toString(),
          executionAttemptId: attempt.toString(),
          checkpointId: "7",
          reason: "BECAUSE",
        },
      }),
      DescriptorError,
      ErrorCodes.DESCRIPTOR,
      "reason",
    );
    expect(received).toEqual([]);
  });
});
