/**
 * A consumer's partition exception crosses the control plane to the job side with the partition
 * it names (`partitionId`), so the job master can re-run the partition's producer: a task's
 * FAILED state report (`updateTaskExecutionState`) carries it through the message's schema.
 */
import {
  ExecutionAttemptID,
  isPartitionException,
  JobID,
  PartitionConnectionError,
  type PartitionException,
  ResultPartitionID,
} from "@sluice/core";
import {
  deserializeThrowable,
  type JobMasterGateway,
  serializeThrowable,
  type TaskExecutionState,
} from "@sluice/runtime/plugin";
import { describe, expect, it } from "vitest";
import { forwardJobMaster } from "./test-support/forwarded-job-master.js";

describe("a partition exception over the control plane", () => {
  it("reaches the job master in a FAILED state report with its partition and producer", async () => {
    const jobId = new JobID();
    const reports: TaskExecutionState[] = [];
    const jobMaster = {
      updateTaskExecutionState: (update: TaskExecutionState) => reports.push(update),
    } as unknown as JobMasterGateway;
    const { remote, undelivered } = forwardJobMaster(jobMaster, jobId);
    const partitionId = new ResultPartitionID();
    const error = new PartitionConnectionError("lost the connection to the producer", {
      partitionId,
    });
    remote.updateTaskExecutionState({
      jobId,
      executionAttemptId: new ExecutionAttemptID(),
      state: "FAILED",
      error: serializeThrowable(error),
    });
    await expect.poll(() => reports.length).toBe(1);
    expect(undelivered).toEqual([]);
    const sent = reports[0]?.error;
    expect(sent?.partitionId).toBe(partitionId.toString());
    const received = deserializeThrowable(sent as NonNullable<typeof sent>);
    expect(received).toBeInstanceOf(PartitionConnectionError);
    expect(isPartitionException(received)).toBe(true);
    expect((received as PartitionException).partitionId.equals(partitionId)).toBe(true);
    expect(received.message).toContain(String(partitionId.producerId));
  });
});
