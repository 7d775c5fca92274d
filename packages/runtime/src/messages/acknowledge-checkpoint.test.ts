import { ErrorCodes, ExecutionAttemptID, JobID } from "@sluice/core";
import { describe, expect, it } from "vitest";
import { AcknowledgeCheckpointCodec } from "./acknowledge-checkpoint.js";
import { CheckpointFailureReason } from "./checkpoint-failure-reason.js";
import { DeclineCheckpointCodec } from "./decline-checkpoint.js";
import { serializeThrowable } from "./serialized-throwable.js";

const ack = {
  jobId: new JobID(),
  executionAttemptId: new ExecutionAttemptID(),
  checkpointId: 2n ** 62n,
  metrics: {
    alignmentDurationNanos: 1_500_000,
    bytesProcessedDuringAlignment: 4096,
    checkpointStartDelayNanos: 2_000_000,
    syncDurationMillis: 1,
    asyncDurationMillis: 3,
  },
  stateHandle: { path: "/tmp/chk-1/a.json", size: 120 },
};

describe("checkpoint messages across processes", () => {
  it("round-trips an acknowledgement through JSON text, with and without a snapshot", () => {
    const codec = AcknowledgeCheckpointCodec;
    const decoded = codec.deserialize(codec.serialize(ack));
    expect(decoded.jobId.equals(ack.jobId)).toBe(true);
    expect(decoded.executionAttemptId.equals(ack.executionAttemptId)).toBe(true);
    expect(decoded.checkpointId).toBe(2n ** 62n);
    expect(decoded.metrics).toEqual(ack.metrics);
    expect(decoded.stateHandle).toEqual(ack.stateHandle);
    const { stateHandle: _, ...stateless } = ack;
    const json = codec.toJSON(stateless);
    expect(codec.toJSON(codec.fromJSON(json))).toEqual(json);
    expect(codec.fromJSON(json).stateHandle).toBeUndefined();
  });

  it("round-trips a decline with its error, whose code survives", () => {
    const decline = {
      jobId: ack.jobId,
      executionAttemptId: ack.executionAttemptId,
      checkpointId: 9n,
      reason: CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION,
      error: serializeThrowable(
        Object.assign(new Error("disk full"), { code: ErrorCodes.CHECKPOINT }),
      ),
    };
    const codec = DeclineCheckpointCodec;
    const decoded = codec.deserialize(codec.serialize(decline));
    expect(codec.toJSON(decoded)).toEqual(codec.toJSON(decline));
    expect(decoded).toMatchObject({ checkpointId: 9n, reason: "CHECKPOINT_ASYNC_EXCEPTION" });
    expect(decoded.error).toMatchObject({ code: ErrorCodes.CHECKPOINT, message: "disk full" });
  });

  it("names the bad field of a malformed message", () => {
    const json = { ...AcknowledgeCheckpointCodec.toJSON(ack), checkpointId: "-1" };
    expect(() => AcknowledgeCheckpointCodec.fromJSON(json)).toThrow(
      expect.objectContaining({
        code: ErrorCodes.DESCRIPTOR,
        message: expect.stringContaining('"checkpointId"'),
      }),
    );
    const decline = {
      ...DeclineCheckpointCodec.toJSON({ ...ack, reason: "CHECKPOINT_EXPIRED" }),
      reason: "BECAUSE",
    };
    expect(() => DeclineCheckpointCodec.fromJSON(decline)).toThrow(/"reason" must be one of/);
  });
});
