import {
  CancelCheckpointMarker,
  deferred,
  ExecutionAttemptID,
  JobID,
  type RuntimeEvent,
} from "@sluice/core";
import { describe, expect, it } from "vitest";
import type { AcknowledgeCheckpoint } from "../messages/acknowledge-checkpoint.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import { CheckpointingMode } from "../messages/checkpointing-mode.js";
import type { DeclineCheckpoint } from "../messages/decline-checkpoint.js";
import { SubtaskCheckpointCoordinator } from "./subtask-checkpoint-coordinator.js";

/**
 * A source's coordinator that keeps its acknowledgements and declines, the events it sends
 * downstream, the snapshots it wrote (no file) and the ones it deleted.
 */
function sourceCoordinator(maxRecordAbortedCheckpoints?: number) {
  const acks: AcknowledgeCheckpoint[] = [];
  const declines: DeclineCheckpoint[] = [];
  const events: RuntimeEvent[] = [];
  const written: bigint[] = [];
  const discarded: string[] = [];
  const coordinator = new SubtaskCheckpointCoordinator({
    jobId: new JobID(),
    executionAttemptId: new ExecutionAttemptID(),
    taskName: "Sink (1/1)#0",
    mode: CheckpointingMode.EXACTLY_ONCE,
    persist: async (checkpointId) => {
      written.push(checkpointId);
      return { path: `chk-${checkpointId}`, size: 1 };
    },
    discard: async (handle) => {
      discarded.push(handle.path);
    },
    acknowledge: (ack) => acks.push(ack),
    decline: (decline) => declines.push(decline),
    ...(maxRecordAbortedCheckpoints === undefined ? {} : { maxRecordAbortedCheckpoints }),
  });
  coordinator.setOutputs([{ broadcastEvent: (event) => events.push(event) }]);
  const snapshots: bigint[] = [];
  coordinator.setCheckpointHandler({
    snapshotState: (checkpointId) => {
      snapshots.push(checkpointId);
      return { n: 1 };
    },
  });
  return { coordinator, acks, declines, events, written, discarded, snapshots };
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

describe("SubtaskCheckpointCoordinator aborts (SubtaskCheckpointCoordinatorTest)", () => {
  it("testNotifyCheckpointAbortedManyTimes: remembers at most maxRecordAbortedCheckpoints aborted checkpoints", () => {
    const max = 256;
    const { coordinator } = sourceCoordinator(max);
    for (let i = 1; i < max + 42; i++) {
      coordinator.notifyCheckpointAborted(BigInt(i));
      expect(coordinator.numberOfRecordedAbortedCheckpoints).toBe(Math.min(max, i));
    }
  });

  it("testNotifyCheckpointAbortedBeforeAsyncPhase: a checkpoint aborted before its trigger takes no snapshot and is forgotten", async () => {
    const { coordinator, acks, declines, snapshots, written } = sourceCoordinator();
    coordinator.notifyCheckpointAborted(42n);
    expect(coordinator.numberOfRecordedAbortedCheckpoints).toBe(1);
    coordinator.triggerCheckpoint(42n, 1n);
    await coordinator.waitForPendingCheckpoints();
    expect(snapshots).toEqual([]);
    expect(written).toEqual([]);
    // The job side aborted it already: neither acknowledged nor declined.
    expect(acks).toEqual([]);
    expect(declines).toEqual([]);
    expect(coordinator.numberOfRecordedAbortedCheckpoints).toBe(0);
  });

  it("testBroadcastCancelCheckpointMarkerOnAbortingFromCoordinator: sends a cancellation marker instead of the barrier", () => {
    const { coordinator, events } = sourceCoordinator();
    coordinator.notifyCheckpointAborted(42n);
    coordinator.triggerCheckpoint(42n, 1n);
    expect(events).toEqual([new CancelCheckpointMarker(42n)]);
  });

  it("testNotifyCheckpointAbortedDuringAsyncPhase: cancels the asynchronous part: nothing acknowledged, the written snapshot deleted", async () => {
    const { coordinator, acks, declines, written, discarded } = sourceCoordinator();
    const persisted = deferred();
    coordinator.setCheckpointHandler({
      snapshotState: () => ({ n: 1 }),
      persistSnapshot: () => persisted.promise,
    });
    coordinator.triggerCheckpoint(42n, 1n);
    coordinator.notifyCheckpointAborted(42n);
    // It runs already: cancelled, not remembered for a trigger to come.
    expect(coordinator.numberOfRecordedAbortedCheckpoints).toBe(0);
    persisted.resolve();
    await coordinator.waitForPendingCheckpoints();
    expect(written).toEqual([42n]);
    expect(discarded).toEqual(["chk-42"]);
    expect(acks).toEqual([]);
    expect(declines).toEqual([]);
  });

  it("testNotifyCheckpointAbortedAfterAsyncPhase: an abort after the acknowledgement changes nothing and is not remembered", async () => {
    const { coordinator, acks } = sourceCoordinator();
    coordinator.triggerCheckpoint(42n, 1n);
    await coordinator.waitForPendingCheckpoints();
    coordinator.notifyCheckpointAborted(42n);
    expect(coordinator.numberOfRecordedAbortedCheckpoints).toBe(0);
    expect(acks.map((ack) => ack.checkpointId)).toEqual([42n]);
  });

  it("skips a checkpoint aborted so long ago that it is no longer remembered", () => {
    const { coordinator, events, snapshots } = sourceCoordinator(2);
    for (const id of [1n, 2n, 3n, 4n, 5n]) coordinator.notifyCheckpointAborted(id);
    expect(coordinator.numberOfRecordedAbortedCheckpoints).toBe(2);
    coordinator.triggerCheckpoint(1n, 1n);
    expect(snapshots).toEqual([]);
    expect(events).toEqual([new CancelCheckpointMarker(1n)]);
  });

  it("forwards a cancellation marker and declines when its barrier handler aborts a checkpoint on one, and never takes that checkpoint later", async () => {
    const { coordinator, acks, declines, events, snapshots } = sourceCoordinator();
    coordinator.abortCheckpointOnBarrier(
      7n,
      CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
    );
    expect(events).toEqual([new CancelCheckpointMarker(7n)]);
    expect(declines.map((d) => [d.checkpointId, d.reason])).toEqual([
      [7n, CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER],
    ]);
    coordinator.triggerCheckpoint(7n, 1n);
    await coordinator.waitForPendingCheckpoints();
    expect(snapshots).toEqual([]);
    expect(acks).toEqual([]);
  });

  it("skips a checkpoint older than one it took and declines it as subsumed", async () => {
    const { coordinator, acks, declines, events, snapshots } = sourceCoordinator();
    coordinator.triggerCheckpoint(5n, 1n);
    coordinator.triggerCheckpoint(4n, 1n);
    await coordinator.waitForPendingCheckpoints();
    expect(snapshots).toEqual([5n]);
    expect(events.map((event) => (event.kind === "CheckpointBarrier" ? event.id : event))).toEqual([
      5n,
    ]);
    expect(acks.map((ack) => ack.checkpointId)).toEqual([5n]);
    expect(declines.map((d) => [d.checkpointId, d.reason])).toEqual([
      [4n, CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED],
    ]);
  });
});
