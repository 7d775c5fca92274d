import { ExecutionAttemptID, JobID } from "@sluice/core";
import { describe, expect, it } from "vitest";
import type { AcknowledgeCheckpoint } from "../messages/acknowledge-checkpoint.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import { CheckpointingMode } from "../messages/checkpointing-mode.js";
import type { DeclineCheckpoint } from "../messages/decline-checkpoint.js";
import { SubtaskCheckpointCoordinator } from "./subtask-checkpoint-coordinator.js";

/** A source's coordinator that keeps its acknowledgements and declines, with no state file. */
function sourceCoordinator() {
  const acks: AcknowledgeCheckpoint[] = [];
  const declines: DeclineCheckpoint[] = [];
  const coordinator = new SubtaskCheckpointCoordinator({
    jobId: new JobID(),
    executionAttemptId: new ExecutionAttemptID(),
    taskName: "Sink (1/1)#0",
    mode: CheckpointingMode.EXACTLY_ONCE,
    persist: async () => ({ path: "unused", size: 0 }),
    discard: async () => {},
    acknowledge: (ack) => acks.push(ack),
    decline: (decline) => declines.push(decline),
  });
  return { coordinator, acks, declines };
}

describe("SubtaskCheckpointCoordinator and CheckpointHandler.persistSnapshot", () => {
  it("acknowledges only once the handler's asynchronous part resolved", async () => {
    const { coordinator, acks } = sourceCoordinator();
    let release: () => void = () => {};
    const persisted = new Promise<void>((resolve) => {
      release = resolve;
    });
    const started: bigint[] = [];
    coordinator.setCheckpointHandler({
      snapshotState: () => undefined,
      persistSnapshot: (checkpointId) => {
        started.push(checkpointId);
        return persisted;
      },
    });
    coordinator.triggerCheckpoint(4n, 1n);
    // Give the asynchronous part every chance to acknowledge early.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([4n]);
    expect(acks).toEqual([]);
    release();
    await coordinator.waitForPendingCheckpoints();
    expect(acks.map((ack) => ack.checkpointId)).toEqual([4n]);
  });

  it("declines with the handler's error when its asynchronous part rejects", async () => {
    const { coordinator, acks, declines } = sourceCoordinator();
    coordinator.setCheckpointHandler({
      snapshotState: () => undefined,
      persistSnapshot: async () => {
        throw new Error("the disk is full");
      },
    });
    coordinator.triggerCheckpoint(5n, 1n);
    await coordinator.waitForPendingCheckpoints();
    expect(acks).toEqual([]);
    expect(declines).toHaveLength(1);
    expect(declines[0]?.reason).toBe(CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION);
    expect(declines[0]?.error?.message).toMatch(
      /persistSnapshot of checkpoint 5 failed: the disk is full/,
    );
    expect(declines[0]?.error?.code).toBe("SLUICE_ERR_CHECKPOINT");
  });
});
