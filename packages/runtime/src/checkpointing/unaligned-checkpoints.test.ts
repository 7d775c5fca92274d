import { CheckpointAlignment } from "@sluice/core";
import { describe, expect, it } from "vitest";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import type { SingleCheckpointBarrierHandler } from "./single-checkpoint-barrier-handler.js";
import { type HandlerFixture, useHandlerFixture } from "./test-support/handler-fixture.js";
import {
  barrier,
  buffer,
  cancel,
  endOfPartition,
  unalignedBarrier,
} from "./test-support/scripted-input-gate.js";

// Ported case by case from Flink's UnalignedCheckpointsTest (its facts, not its code): an
// unaligned checkpoint triggers at its first barrier, holds no channel, and its input is
// complete once every open channel delivered the barrier or ended. Which in-flight data is
// persisted is the channels' business (network tests) and end to end the recovery property test.

type Fixture = HandlerFixture<SingleCheckpointBarrierHandler>;

const { setUpSingle: setUp } = useHandlerFixture();

/** Polls everything; returns the channel of each data buffer and the kind of each event. */
function pollAll(f: Fixture): string[] {
  const out: string[] = [];
  for (let next = f.input.pollNext(); next !== undefined; next = f.input.pollNext()) {
    out.push(next.event === undefined ? `d${next.channelIndex}` : next.event.kind);
  }
  return out;
}

describe("SingleCheckpointBarrierHandler (unaligned), from Flink's UnalignedCheckpointsTest", () => {
  it("testSingleChannelNoBarriers / testMultiChannelNoBarriers: data passes, nothing triggers", () => {
    const f = setUp(3, [buffer(0), buffer(1), buffer(2), buffer(0), buffer(2)]);
    expect(pollAll(f)).toEqual(["d0", "d1", "d2", "d0", "d2"]);
    expect(f.task.triggered).toEqual([]);
    expect(f.handler.isCheckpointPending()).toBe(false);
  });

  it("testSingleChannelWithBarriers: every barrier triggers at once and completes its input", () => {
    const f = setUp(1, [
      buffer(0),
      unalignedBarrier(1, 0),
      buffer(0),
      unalignedBarrier(2, 0),
      unalignedBarrier(3, 0),
      buffer(0),
    ]);
    pollAll(f);
    expect(f.task.triggered).toEqual([1n, 2n, 3n]);
    expect(f.task.inputsComplete).toEqual([1n, 2n, 3n]);
    expect(f.gate.resumes).toBe(0);
    expect(f.task.triggeredBarriers.map((b) => b.options.alignment)).toEqual([
      CheckpointAlignment.UNALIGNED,
      CheckpointAlignment.UNALIGNED,
      CheckpointAlignment.UNALIGNED,
    ]);
  });

  it("testMultiChannelWithBarriers: triggers at the first barrier, holds nothing, completes at the last", () => {
    const f = setUp(3, [
      buffer(0),
      unalignedBarrier(1, 1),
      buffer(0),
      buffer(1),
      buffer(2),
      unalignedBarrier(1, 0),
      buffer(0),
      buffer(2),
      unalignedBarrier(1, 2),
      buffer(2),
    ]);
    const seen: string[] = [];
    for (let next = f.input.pollNext(); next !== undefined; next = f.input.pollNext()) {
      seen.push(next.event === undefined ? `d${next.channelIndex}` : "B");
      if (next.event !== undefined) {
        seen.push(`t${f.task.triggered.length}/c${f.task.inputsComplete.length}`);
      }
    }
    // Triggered at the first barrier; input complete only after the third.
    expect(seen).toEqual([
      "d0",
      "B",
      "t1/c0",
      "d0",
      "d1",
      "d2",
      "B",
      "t1/c0",
      "d0",
      "d2",
      "B",
      "t1/c1",
      "d2",
    ]);
    expect(f.handler.isCheckpointPending()).toBe(false);
    expect(f.gate.resumes).toBe(0);
  });

  it("testMultiChannelSkippingCheckpoints: a newer barrier subsumes a pending checkpoint; late barriers pass", () => {
    const f = setUp(3, [
      unalignedBarrier(1, 0),
      unalignedBarrier(2, 1),
      unalignedBarrier(1, 2),
      unalignedBarrier(2, 0),
      unalignedBarrier(1, 1),
      unalignedBarrier(2, 2),
    ]);
    pollAll(f);
    expect(f.task.sequence).toEqual([1, -1, 2]);
    expect(f.task.reasons).toEqual([CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED]);
    expect(f.task.inputsComplete).toEqual([2n]);
  });

  it("testMissingCancellationBarriers: a marker for a newer checkpoint aborts it, the pending one too", () => {
    const f = setUp(2, [
      unalignedBarrier(1, 0),
      cancel(2, 0),
      cancel(3, 1),
      unalignedBarrier(1, 1),
      unalignedBarrier(3, 0),
      buffer(1),
    ]);
    pollAll(f);
    // 1 triggered, then subsumed by the markers of 2 and 3; its late barrier and 3's do nothing.
    expect(f.task.triggered).toEqual([1n]);
    expect(f.task.aborted).toEqual([2n, 3n]);
    expect(f.task.inputsComplete).toEqual([]);
  });

  it("testProcessCancellationBarrierAfterProcessBarrier: a marker of the pending checkpoint aborts it", () => {
    const f = setUp(2, [unalignedBarrier(1, 0), cancel(1, 1), unalignedBarrier(1, 1)]);
    pollAll(f);
    expect(f.task.sequence).toEqual([1, -1]);
    expect(f.task.lastReason).toBe(
      CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
    );
    expect(f.task.inputsComplete).toEqual([]);
  });

  it("testProcessCancellationBarrierBeforeProcessAndReceiveBarrier: barriers after the marker are late", () => {
    const f = setUp(2, [cancel(1, 0), unalignedBarrier(1, 1), unalignedBarrier(1, 0)]);
    pollAll(f);
    expect(f.task.sequence).toEqual([-1]);
    expect(f.handler.isCheckpointPending()).toBe(false);
  });

  it("testStartAlignmentWithClosedChannels: ended channels are not waited for", () => {
    const f = setUp(3, [
      endOfPartition(2),
      unalignedBarrier(1, 0),
      buffer(1),
      unalignedBarrier(1, 1),
      endOfPartition(0),
      unalignedBarrier(2, 1),
    ]);
    pollAll(f);
    expect(f.task.triggered).toEqual([1n, 2n]);
    expect(f.task.inputsComplete).toEqual([1n, 2n]);
  });

  it("testEndOfStreamWhileCheckpoint: a channel that ends completes the pending input", () => {
    const f = setUp(2, [unalignedBarrier(1, 0), buffer(1), endOfPartition(1)]);
    pollAll(f);
    expect(f.task.triggered).toEqual([1n]);
    expect(f.task.inputsComplete).toEqual([1n]);
  });

  it("testEndOfStreamWhileCheckpoint without checkpoints after tasks finish: it aborts instead", () => {
    const f = setUp(2, [unalignedBarrier(1, 0), endOfPartition(1)], {
      checkpointsAfterTasksFinish: false,
    });
    pollAll(f);
    expect(f.task.sequence).toEqual([1, -1]);
    expect(f.task.lastReason).toBe(CheckpointFailureReason.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM);
    expect(f.task.inputsComplete).toEqual([]);
  });

  it("testSwitchToUnalignedByUpstream: an unaligned barrier mid-alignment triggers and releases held channels", () => {
    const f = setUp(3, [
      barrier(1, 0),
      unalignedBarrier(1, 1),
      buffer(0),
      barrier(1, 2),
      buffer(2),
    ]);
    pollAll(f);
    expect(f.task.triggered).toEqual([1n]);
    expect(f.task.triggeredBarriers[0]?.options.alignment).toBe(CheckpointAlignment.UNALIGNED);
    // Channel 0 was held by its aligned barrier and resumed at the switch; channel 2's aligned
    // barrier, arriving after it, is resumed at once.
    expect(f.gate.resumes).toBe(2);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    expect(f.task.inputsComplete).toEqual([1n]);
  });
});
