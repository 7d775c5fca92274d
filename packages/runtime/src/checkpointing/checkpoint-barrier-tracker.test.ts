import { CheckpointBarrier } from "@sluice/core";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../clock/test-support/manual-clock.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import { CheckpointBarrierTracker } from "./checkpoint-barrier-tracker.js";
import {
  alignmentEnd,
  alignmentStart,
  firstCheckpointOfThreeChannels,
  secondCheckpointOfThreeChannels,
  singleChannelBarriers,
} from "./test-support/barrier-scripts.js";
import { type HandlerFixture, useHandlerFixture } from "./test-support/handler-fixture.js";
import {
  buffer,
  cancel,
  endOfPartition,
  ScriptedInputGate,
  type ScriptedItem,
  trackedBarrier,
} from "./test-support/scripted-input-gate.js";
import { ValidatingCheckpointableTask } from "./test-support/validating-checkpointable-task.js";

// Ported case by case from Flink's CheckpointBarrierTrackerTest.

const barrier = trackedBarrier;

interface Fixture extends HandlerFixture<CheckpointBarrierTracker> {
  readonly clock: ManualClock;
}

const fixtures = useHandlerFixture();

function setUp(channels: number, sequence: readonly ScriptedItem[] = []): Fixture {
  const clock = new ManualClock();
  const fixture = fixtures.setUp(
    channels,
    sequence,
    (gate, task) => new CheckpointBarrierTracker({ taskName: "test", inputs: [gate], task, clock }),
  );
  return { ...fixture, clock };
}

/** Polls every scripted item, checking each comes out unchanged and in order. */
function pollAll(f: Fixture, sequence: readonly ScriptedItem[], eachStep?: () => void): void {
  for (const expected of sequence) {
    const actual = f.input.pollNext();
    expect(actual?.channelIndex).toBe(expected.channel);
    if (expected.event !== undefined) expect(actual?.event).toBe(expected.event);
    eachStep?.();
  }
}

function run(channels: number, sequence: readonly ScriptedItem[]): Fixture {
  const f = setUp(channels, sequence);
  pollAll(f, sequence);
  return f;
}

describe("CheckpointBarrierTracker (at-least-once)", () => {
  it("hands every buffer of one channel through when no barrier comes", () => {
    const f = run(1, [buffer(0), buffer(0), buffer(0)]);
    expect(f.task.sequence).toEqual([]);
  });

  it("hands every buffer of many channels through when no barrier comes", () => {
    const f = run(4, [
      buffer(2),
      buffer(2),
      buffer(0),
      buffer(1),
      buffer(0),
      buffer(3),
      buffer(1),
      buffer(1),
      buffer(2),
    ]);
    expect(f.task.sequence).toEqual([]);
  });

  it("triggers every barrier of a single channel at once", () => {
    const f = run(1, singleChannelBarriers(barrier));
    expect(f.task.sequence).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("triggers the barriers of a single channel that skips checkpoint ids", () => {
    const f = run(1, [
      buffer(0),
      barrier(1, 0),
      buffer(0),
      buffer(0),
      barrier(3, 0),
      buffer(0),
      barrier(4, 0),
      barrier(6, 0),
      buffer(0),
      barrier(7, 0),
      buffer(0),
      barrier(10, 0),
      buffer(0),
    ]);
    expect(f.task.sequence).toEqual([1, 3, 4, 6, 7, 10]);
  });

  it("triggers a checkpoint once every channel delivered its barrier, without blocking any", () => {
    const f = run(3, [
      ...firstCheckpointOfThreeChannels(barrier),
      ...secondCheckpointOfThreeChannels(barrier),
      buffer(2),
      buffer(2),
      barrier(3, 2),
      buffer(2),
      buffer(2),
      barrier(3, 0),
      barrier(3, 1),
      barrier(4, 1),
      barrier(4, 2),
      barrier(4, 0),
      buffer(0),
    ]);
    expect(f.task.sequence).toEqual([1, 2, 3, 4]);
    expect(f.gate.resumes).toBe(0);
  });

  it("drops an incomplete checkpoint silently when a later one completes", () => {
    const f = run(3, [
      ...firstCheckpointOfThreeChannels(barrier),
      ...secondCheckpointOfThreeChannels(barrier),
      buffer(2),
      buffer(2),
      barrier(3, 2),
      buffer(2),
      buffer(2),
      // jump to checkpoint 4
      barrier(4, 0),
      buffer(0),
      buffer(1),
      buffer(2),
      barrier(4, 1),
      buffer(1),
      barrier(4, 2),
      buffer(0),
    ]);
    expect(f.task.sequence).toEqual([1, 2, 4]);
  });

  it("keeps a checkpoint pending when barriers of later checkpoints arrive first, and completes it late", () => {
    const f = run(3, [
      // checkpoint 2
      buffer(1),
      buffer(1),
      buffer(0),
      buffer(2),
      barrier(2, 1),
      barrier(2, 0),
      barrier(2, 2),
      // incomplete checkpoint 3
      buffer(1),
      buffer(0),
      barrier(3, 1),
      barrier(3, 2),
      // some barriers from checkpoint 4
      buffer(1),
      buffer(0),
      barrier(4, 2),
      barrier(4, 1),
      buffer(1),
      buffer(2),
      // last barrier from checkpoint 3
      barrier(3, 0),
      // complete checkpoint 4
      buffer(0),
      barrier(4, 0),
      // regular checkpoint 5
      buffer(1),
      buffer(2),
      barrier(5, 1),
      buffer(0),
      barrier(5, 0),
      buffer(1),
      barrier(5, 2),
      // checkpoint 6 (incomplete),
      buffer(1),
      barrier(6, 1),
      buffer(0),
      barrier(6, 0),
      // checkpoint 7, with early barriers for checkpoints 8 and 9
      buffer(1),
      barrier(7, 1),
      buffer(0),
      barrier(7, 2),
      buffer(2),
      barrier(8, 2),
      buffer(0),
      barrier(8, 1),
      buffer(1),
      barrier(9, 1),
      // complete checkpoint 7, first barriers from checkpoint 10
      barrier(7, 0),
      buffer(0),
      barrier(9, 2),
      buffer(2),
      barrier(10, 2),
      // complete checkpoint 8 and 9
      barrier(8, 0),
      buffer(1),
      buffer(2),
      barrier(9, 0),
      // trailing data
      buffer(1),
      buffer(0),
      buffer(2),
      // complete checkpoint 10
      barrier(10, 0),
      barrier(10, 1),
    ]);
    expect(f.task.sequence).toEqual([2, 3, 4, 5, 7, 8, 9, 10]);
  });

  it("times the alignment of a checkpoint whose first barrier overtook the older one's cancellation", () => {
    const sequence = [barrier(1, 1), barrier(2, 1), cancel(1, 0), barrier(2, 0)];
    const f = setUp(2, sequence);
    pollAll(f, sequence, () => f.clock.advanceMillis(1000));
    expect(f.task.sequence).toEqual([-1, 2]);
    expect(f.task.metrics[0]?.alignmentDurationNanos).toBe(2_000_000_000);
  });

  it("aborts on cancellation markers of a single channel and triggers the barriers between", () => {
    const f = run(1, [
      buffer(0),
      barrier(1, 0),
      buffer(0),
      barrier(2, 0),
      cancel(4, 0),
      barrier(5, 0),
      buffer(0),
      cancel(6, 0),
      buffer(0),
    ]);
    expect(f.task.sequence).toEqual([1, 2, -4, 5, -6]);
  });

  it("aborts on cancellation markers of many channels: on the last barrier, on the first, and before any", () => {
    const f = run(3, [
      // some buffers and a successful checkpoint
      ...firstCheckpointOfThreeChannels(barrier),
      // aborted on last barrier
      buffer(0),
      buffer(2),
      barrier(2, 0),
      barrier(2, 2),
      buffer(0),
      buffer(2),
      cancel(2, 1),
      // successful checkpoint
      buffer(2),
      buffer(1),
      barrier(3, 1),
      barrier(3, 2),
      barrier(3, 0),
      // abort on first barrier
      buffer(0),
      buffer(1),
      cancel(4, 1),
      barrier(4, 2),
      buffer(0),
      barrier(4, 0),
      // another successful checkpoint
      buffer(0),
      buffer(1),
      buffer(2),
      barrier(5, 2),
      barrier(5, 1),
      barrier(5, 0),
      // abort multiple cancellations and a barrier after the cancellations
      buffer(0),
      buffer(1),
      cancel(6, 1),
      cancel(6, 2),
      barrier(6, 0),
      buffer(0),
    ]);
    expect(f.task.sequence).toEqual([1, -2, 3, -4, 5, -6]);
    expect(f.task.reasons).toEqual([
      CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
      CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
      CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
    ]);
  });

  it("aborts each checkpoint once when the cancellation markers of two checkpoints interleave", () => {
    const f = run(3, [
      barrier(1, 0),
      cancel(2, 0),
      cancel(1, 1),
      cancel(2, 1),
      cancel(1, 2),
      cancel(2, 2),
      buffer(0),
    ]);
    expect(f.task.sequence).toEqual([-1, -2]);
    expect(f.handler.isCheckpointPending()).toBe(false);
  });

  it("measures the start delay, the alignment time and the bytes processed during alignment", () => {
    const size = 100;
    const f = setUp(3);
    const created = BigInt(f.clock.absoluteTimeMillis());
    f.clock.advanceMillis(10);
    f.gate.add(...alignmentStart(barrier, size, created));
    while (f.input.pollNext() !== undefined) {}
    f.clock.advanceMillis(10);
    f.gate.add(...alignmentEnd(barrier, size, created));
    while (f.input.pollNext() !== undefined) {}
    expect(f.task.metrics).toEqual([
      {
        alignmentDurationNanos: 10_000_000,
        bytesProcessedDuringAlignment: 3 * size,
        checkpointStartDelayNanos: 10_000_000,
      },
    ]);
    expect(f.handler.getCheckpointStartDelayNanos()).toBe(10_000_000);
  });

  it("reports no alignment time and no aligned bytes for a single channel", () => {
    const f = setUp(1);
    const created = BigInt(f.clock.absoluteTimeMillis());
    f.clock.advanceMillis(10);
    f.gate.add(buffer(0, 100), barrier(1, 0, created), buffer(0, 100), endOfPartition(0));
    while (f.input.pollNext() !== undefined) {}
    expect(f.task.metrics).toEqual([
      {
        alignmentDurationNanos: 0,
        bytesProcessedDuringAlignment: 0,
        checkpointStartDelayNanos: 10_000_000,
      },
    ]);
  });

  it("triggers the newest checkpoint that waited only for a channel that ends, dropping older ones", () => {
    const f = run(3, [
      barrier(1, 0),
      barrier(2, 0),
      barrier(2, 1),
      barrier(3, 0),
      barrier(4, 0),
      barrier(4, 1),
      barrier(5, 1),
      endOfPartition(2),
    ]);
    expect(f.task.triggered).toEqual([4n]);
    expect(f.task.aborted).toEqual([]);
    expect(f.handler.getPendingCheckpointIds()).toEqual([5n]);
    expect(f.handler.getNumOpenChannels()).toBe(2);
  });

  it("counts a channel that delivered the barrier and then ended only once", () => {
    const sequence = [barrier(2, 0), barrier(2, 1), endOfPartition(1), barrier(2, 2)];
    const f = setUp(3, sequence);
    pollAll(f, sequence.slice(0, 3));
    expect(f.task.sequence).toEqual([]);
    pollAll(f, sequence.slice(3));
    expect(f.task.triggered).toEqual([2n]);
  });

  it("triggers later checkpoints over the channels still open after some ended", () => {
    const f = run(3, [
      endOfPartition(2),
      barrier(5, 0),
      barrier(6, 0),
      barrier(6, 1),
      endOfPartition(1),
      barrier(7, 0),
    ]);
    expect(f.task.triggered).toEqual([6n, 7n]);
    expect(f.task.aborted).toEqual([]);
  });

  it("completes a checkpoint begun with two open channels after one of them ended, not as a new one", () => {
    const f = run(2, [barrier(1, 0), endOfPartition(0), barrier(1, 1)]);
    expect(f.task.triggered).toEqual([1n]);
    expect(f.handler.isCheckpointPending()).toBe(false);
  });

  it("forgets an aborted checkpoint once a channel's end accounts for its last barrier", () => {
    const f = run(3, [cancel(4, 0), barrier(4, 1), barrier(5, 1), endOfPartition(2)]);
    expect(f.task.aborted).toEqual([4n]);
    expect(f.task.triggered).toEqual([]);
    expect(f.handler.getPendingCheckpointIds()).toEqual([5n]);
    expect(f.handler.getNumOpenChannels()).toBe(2);
  });

  it("aborts older checkpoints with a newer marker, and markers of new checkpoints after channels ended", () => {
    const f = run(3, [
      endOfPartition(2),
      barrier(5, 0),
      barrier(6, 0),
      cancel(6, 1),
      endOfPartition(1),
      cancel(7, 0),
    ]);
    expect(f.task.aborted).toEqual([5n, 6n, 7n]);
    expect(f.task.triggered).toEqual([]);
  });

  it("removes a checkpoint begun with two open channels on a marker after one of them ended", () => {
    const f = run(2, [barrier(1, 0, 0n), endOfPartition(0), cancel(1, 1)]);
    expect(f.task.lastCanceledCheckpointId).toBe(1n);
    expect(f.handler.isCheckpointPending()).toBe(false);
  });

  it("times only the newest checkpoint's alignment when two complete one after the other", () => {
    const sequence = [barrier(1, 1), barrier(2, 1), barrier(1, 0), barrier(2, 0)];
    const f = setUp(2, sequence);
    pollAll(f, sequence, () => f.clock.advanceMillis(1000));
    expect(f.task.triggered).toEqual([1n, 2n]);
    expect(f.task.metrics.map((m) => m.alignmentDurationNanos)).toEqual([0, 2_000_000_000]);
  });

  it("aborts every pending checkpoint when a channel ends and checkpoints after tasks finish are off", () => {
    const gate = new ScriptedInputGate(3);
    const task = new ValidatingCheckpointableTask();
    const tracker = new CheckpointBarrierTracker({
      taskName: "t",
      inputs: [gate],
      task,
      checkpointsAfterTasksFinish: false,
    });
    const at = (channelIndex: number) => ({ gateIndex: 0, channelIndex });
    tracker.processBarrier(barrier(1, 0).event as CheckpointBarrier, at(0));
    tracker.processBarrier(barrier(2, 0).event as CheckpointBarrier, at(0));
    tracker.processEndOfPartition(at(2));
    expect(task.aborted).toEqual([1n, 2n]);
    expect(task.reasons).toEqual([
      CheckpointFailureReason.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM,
      CheckpointFailureReason.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM,
    ]);
    expect(tracker.isCheckpointPending()).toBe(false);
  });

  it("tracks at most 50 incomplete checkpoints, dropping the oldest", () => {
    const gate = new ScriptedInputGate(2);
    const task = new ValidatingCheckpointableTask();
    const tracker = new CheckpointBarrierTracker({ taskName: "t", inputs: [gate], task });
    for (let id = 1; id <= 51; id++) {
      tracker.processBarrier(barrier(id, 0).event as CheckpointBarrier, {
        gateIndex: 0,
        channelIndex: 0,
      });
    }
    expect(tracker.getPendingCheckpointIds()).toHaveLength(50);
    expect(tracker.getPendingCheckpointIds()[0]).toBe(2n);
    // The dropped checkpoint's last barrier no longer completes it.
    tracker.processBarrier(barrier(1, 1).event as CheckpointBarrier, {
      gateIndex: 0,
      channelIndex: 1,
    });
    expect(task.triggered).toEqual([]);
  });

  it("rejects an aligned barrier, which would block a channel it never resumes", () => {
    const gate = new ScriptedInputGate(2);
    const tracker = new CheckpointBarrierTracker({
      taskName: "t",
      inputs: [gate],
      task: new ValidatingCheckpointableTask(),
    });
    expect(() =>
      tracker.processBarrier(new CheckpointBarrier(1n, 0n), { gateIndex: 0, channelIndex: 0 }),
    ).toThrow(/blocks its channel/);
  });
});
