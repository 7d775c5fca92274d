import { CheckpointAlignment, CheckpointBarrier, DEFAULT_CHECKPOINT_OPTIONS } from "@sluice/core";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../clock/test-support/manual-clock.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import { CheckpointedInputGate } from "./checkpointed-input-gate.js";
import { SingleCheckpointBarrierHandler } from "./single-checkpoint-barrier-handler.js";
import {
  alignmentEnd,
  alignmentStart,
  secondCheckpointOfThreeChannels,
  singleChannelBarriers,
} from "./test-support/barrier-scripts.js";
import { type HandlerFixture, useHandlerFixture } from "./test-support/handler-fixture.js";
import {
  barrier,
  buffer,
  cancel,
  endOfPartition,
  ScriptedInputGate,
  type ScriptedItem,
} from "./test-support/scripted-input-gate.js";
import { ValidatingCheckpointableTask } from "./test-support/validating-checkpointable-task.js";

// Ported case by case from Flink's AlignedCheckpointsTest (and the cancellation cases of its
// UnalignedCheckpointsTest that hold for aligned checkpoints too). The gate behaves like a
// producer: an aligned barrier blocks its channel until the handler resumes it.

interface Fixture extends HandlerFixture<SingleCheckpointBarrierHandler> {
  readonly clock: ManualClock;
}

const fixtures = useHandlerFixture();

function setUp(
  channels: number,
  sequence: readonly ScriptedItem[],
  options: { checkpointsAfterTasksFinish?: boolean } = {},
): Fixture {
  const clock = new ManualClock();
  const fixture = fixtures.setUpSingle(channels, sequence, { clock, ...options });
  return { ...fixture, clock };
}

/** Polls items `from..to` (inclusive) and checks each is the scripted one. */
function check(f: Fixture, from: number, to = from): void {
  for (let i = from; i <= to; i++) {
    const expected = f.sequence[i] as ScriptedItem;
    const actual = f.input.pollNext();
    expect(actual, `item ${i}`).toBeDefined();
    expect(actual?.channelIndex, `channel of item ${i}`).toBe(expected.channel);
    if (expected.event === undefined) expect(actual?.size).toBe(expected.size ?? 1);
    else expect(actual?.event, `event of item ${i}`).toBe(expected.event);
  }
}

function checkAll(f: Fixture): void {
  check(f, 0, f.sequence.length - 1);
}

describe("SingleCheckpointBarrierHandler (aligned)", () => {
  it("hands every item of one channel through unchanged when no barrier comes", () => {
    const f = setUp(1, [buffer(0), buffer(0), buffer(0), endOfPartition(0)]);
    checkAll(f);
    expect(f.handler.getAlignmentDurationNanos()).toBe(0);
  });

  it("hands every item of many channels through unchanged when no barrier comes", () => {
    const f = setUp(4, [
      buffer(2),
      buffer(2),
      buffer(0),
      buffer(1),
      buffer(0),
      endOfPartition(0),
      buffer(3),
      buffer(1),
      endOfPartition(3),
      buffer(1),
      endOfPartition(1),
      buffer(2),
      endOfPartition(2),
    ]);
    checkAll(f);
    expect(f.handler.getAlignmentDurationNanos()).toBe(0);
    expect(f.input.isFinished()).toBe(true);
  });

  it("triggers every barrier of a single channel at once, in order", () => {
    const f = setUp(1, [...singleChannelBarriers(barrier), endOfPartition(0)]);
    f.task.nextExpectedCheckpointId = 1n;
    checkAll(f);
    expect(f.task.triggered).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
    expect(f.gate.getBlockedChannels()).toEqual([]);
  });

  it("aligns many channels: holds each channel at its barrier until the last barrier arrives", () => {
    const f = setUp(3, [
      // checkpoint with data from multi channels
      buffer(0),
      buffer(2),
      buffer(0),
      barrier(1, 1),
      barrier(1, 2),
      buffer(0),
      barrier(1, 0),
      // another checkpoint
      ...secondCheckpointOfThreeChannels(barrier),
      // checkpoint with data only from one channel
      buffer(2),
      buffer(2),
      barrier(3, 2),
      buffer(0),
      buffer(0),
      barrier(3, 0),
      barrier(3, 1),
      // empty checkpoint
      barrier(4, 1),
      barrier(4, 2),
      barrier(4, 0),
      // some trailing data
      buffer(0),
      endOfPartition(0),
      endOfPartition(1),
      endOfPartition(2),
    ]);
    f.task.nextExpectedCheckpointId = 1n;
    check(f, 0, 2);
    expect(f.task.triggered).toEqual([]);
    check(f, 3);
    expect(f.gate.getBlockedChannels()).toEqual([1]);
    f.clock.advanceMillis(3);
    check(f, 4, 6);
    expect(f.task.triggered).toEqual([1n]);
    expect(f.handler.getAlignmentDurationNanos()).toBe(3_000_000);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 7, 11);
    expect(f.task.triggered).toEqual([1n]);
    check(f, 12, 14);
    expect(f.task.triggered).toEqual([1n, 2n]);
    expect(f.handler.getAlignmentDurationNanos()).toBe(0);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 15, 21);
    expect(f.task.triggered).toEqual([1n, 2n, 3n]);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 22, 24);
    expect(f.task.triggered).toEqual([1n, 2n, 3n, 4n]);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 25, 28);
    expect(f.task.aborted).toEqual([]);
  });

  it("skips the current checkpoint when a barrier of a later one arrives on an unblocked channel", () => {
    const f = setUp(
      3,
      [
        // checkpoint 1
        /* 0 */ buffer(0),
        /* 1 */ buffer(2),
        /* 2 */ buffer(0),
        /* 3 */ barrier(1, 1),
        /* 4 */ barrier(1, 2),
        /* 5 */ buffer(0),
        /* 6 */ barrier(1, 0),
        /* 7 */ buffer(1),
        /* 8 */ buffer(0),
        // checkpoint 2 will not complete: pre-mature barrier from checkpoint 3
        /* 9 */ barrier(2, 1),
        /* 10 */ buffer(2),
        /* 11 */ barrier(2, 0),
        /* 12 */ buffer(2),
        /* 13 */ barrier(3, 2),
        /* 14 */ buffer(1),
        /* 15 */ buffer(0),
        /* 16 */ barrier(3, 0),
        /* 17 */ barrier(4, 1),
        /* 18 */ buffer(2),
        /* 19 */ buffer(0),
        /* 20 */ endOfPartition(0),
        /* 21 */ buffer(2),
        /* 22 */ endOfPartition(2),
        /* 23 */ buffer(1),
        /* 24 */ endOfPartition(1),
      ],
      { checkpointsAfterTasksFinish: false },
    );
    f.task.nextExpectedCheckpointId = 1n;
    check(f, 0, 2);
    check(f, 3);
    expect(f.handler.getLatestCheckpointId()).toBe(1n);
    check(f, 4, 6);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 7, 8);
    check(f, 9);
    expect(f.handler.getLatestCheckpointId()).toBe(2n);
    check(f, 10, 12);
    // checkpoint 2 aborted, checkpoint 3 started
    expect(f.gate.getBlockedChannels()).toEqual([0, 1]);
    check(f, 13);
    expect(f.handler.getLatestCheckpointId()).toBe(3n);
    expect(f.gate.getBlockedChannels()).toEqual([2]);
    check(f, 14, 16);
    // checkpoint 3 aborted, checkpoint 4 started
    expect(f.gate.getBlockedChannels()).toEqual([0, 2]);
    check(f, 17);
    expect(f.handler.getLatestCheckpointId()).toBe(4n);
    expect(f.gate.getBlockedChannels()).toEqual([1]);
    check(f, 18, 19);
    // checkpoint 4 aborted (due to end of partition)
    check(f, 20);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 21, 24);
    expect(f.task.triggered).toEqual([1n]);
    expect(f.task.aborted).toEqual([2n, 3n, 4n]);
    expect(f.task.reasons).toEqual([
      CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED,
      CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED,
      CheckpointFailureReason.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM,
    ]);
  });

  it("measures the start delay, the alignment time and the bytes processed during alignment", () => {
    const size = 100;
    const f = setUp(3, []);
    const handlerClock = f.clock;
    const created = BigInt(handlerClock.absoluteTimeMillis());
    handlerClock.advanceMillis(10); // the barrier travels 10 ms before it arrives
    f.gate.add(...alignmentStart(barrier, size, created));
    while (f.input.pollNext() !== undefined) {}
    expect(f.handler.getCheckpointStartDelayNanos()).toBe(10_000_000);
    handlerClock.advanceMillis(10);
    expect(f.handler.getAlignmentDurationNanos()).toBe(10_000_000);
    expect(f.handler.getBytesProcessedDuringAlignment()).toBe(3 * size);
    f.gate.add(...alignmentEnd(barrier, size, created));
    while (f.input.pollNext() !== undefined) {}
    expect(f.handler.getLatestCheckpointId()).toBe(1n);
    expect(f.task.metrics).toEqual([
      {
        alignmentDurationNanos: 10_000_000,
        bytesProcessedDuringAlignment: 3 * size,
        checkpointStartDelayNanos: 10_000_000,
      },
    ]);
    // Read after the alignment: the last alignment's figures.
    expect(f.handler.getAlignmentDurationNanos()).toBe(10_000_000);
    expect(f.handler.getBytesProcessedDuringAlignment()).toBe(3 * size);
  });

  it("resumes every channel when cancellation markers arrive for checkpoints it never saw", () => {
    const f = setUp(2, [barrier(1, 0), cancel(3, 1), cancel(2, 0), cancel(3, 0), buffer(0)]);
    checkAll(f);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    expect(f.task.aborted).toEqual([3n]);
    expect(f.task.triggered).toEqual([]);
  });

  it("aligns only the channels still open when a checkpoint starts", () => {
    const f = setUp(4, [
      // close some channels immediately
      endOfPartition(2),
      endOfPartition(1),
      // checkpoint without blocked data
      buffer(0),
      buffer(0),
      buffer(3),
      barrier(2, 3),
      barrier(2, 0),
      // empty checkpoint
      barrier(3, 0),
      barrier(3, 3),
      // some data, one channel closes
      buffer(0),
      buffer(0),
      buffer(3),
      endOfPartition(0),
      // checkpoint on last remaining channel
      buffer(3),
      barrier(4, 3),
      buffer(3),
      endOfPartition(3),
    ]);
    check(f, 0, 4);
    check(f, 5, 6);
    expect(f.handler.getLatestCheckpointId()).toBe(2n);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 7, 8);
    expect(f.handler.getLatestCheckpointId()).toBe(3n);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 9, 13);
    check(f, 14);
    expect(f.handler.getLatestCheckpointId()).toBe(4n);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 15, 16);
    expect(f.task.triggered).toEqual([2n, 3n, 4n]);
  });

  it("completes a pending checkpoint when the channels it still waits for end", () => {
    const f = setUp(3, [
      // one checkpoint
      barrier(1, 0),
      barrier(1, 1),
      barrier(1, 2),
      // some buffers
      buffer(0),
      buffer(0),
      buffer(2),
      // start the checkpoint that the end of channel 1 completes
      barrier(2, 2),
      barrier(2, 0),
      buffer(1),
      // close one after the barrier one before the barrier
      endOfPartition(1),
      endOfPartition(2),
      buffer(0),
      // final end of stream
      endOfPartition(0),
    ]);
    check(f, 0, 2);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 3, 5);
    expect(f.handler.getLatestCheckpointId()).toBe(1n);
    check(f, 6);
    expect(f.handler.getLatestCheckpointId()).toBe(2n);
    check(f, 7, 8);
    check(f, 9);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    expect(f.task.triggered).toEqual([1n, 2n]);
    check(f, 10, 12);
    expect(f.task.aborted).toEqual([]);
  });

  it("aborts a pending checkpoint when a channel ends and checkpoints after tasks finish are off", () => {
    const f = setUp(
      3,
      [barrier(2, 2), barrier(2, 0), buffer(1), endOfPartition(1), endOfPartition(2)],
      { checkpointsAfterTasksFinish: false },
    );
    check(f, 0, 2);
    expect(f.gate.getBlockedChannels()).toEqual([0, 2]);
    check(f, 3);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    expect(f.task.aborted).toEqual([2n]);
    expect(f.task.lastReason).toBe(CheckpointFailureReason.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM);
    check(f, 4);
    expect(f.task.triggered).toEqual([]);
  });

  it("aborts on cancellation markers of a single channel and triggers the barriers between", () => {
    const f = setUp(1, [
      buffer(0),
      barrier(1, 0),
      buffer(0),
      barrier(2, 0),
      buffer(0),
      cancel(4, 0),
      barrier(5, 0),
      buffer(0),
      cancel(6, 0),
      buffer(0),
    ]);
    f.task.nextExpectedCheckpointId = 1n;
    check(f, 0, 1);
    expect(f.handler.getAlignmentDurationNanos()).toBe(0);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 2, 3);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    f.task.nextExpectedCheckpointId = 5n;
    check(f, 4, 5);
    expect(f.handler.getLatestCheckpointId()).toBe(4n);
    expect(f.task.lastCanceledCheckpointId).toBe(4n);
    expect(f.task.lastReason).toBe(
      CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
    );
    expect(f.handler.getAlignmentDurationNanos()).toBe(0);
    check(f, 6);
    expect(f.handler.getLatestCheckpointId()).toBe(5n);
    expect(f.task.lastCanceledCheckpointId).toBe(4n);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 7, 9);
    expect(f.handler.getLatestCheckpointId()).toBe(6n);
    expect(f.task.lastCanceledCheckpointId).toBe(6n);
    expect(f.handler.getAlignmentDurationNanos()).toBe(0);
    expect(f.task.triggered).toEqual([1n, 2n, 5n]);
    expect(f.task.aborted).toEqual([4n, 6n]);
  });

  it("aborts on cancellation markers of many channels: on the last barrier, on the first, and before any", () => {
    const f = setUp(3, [
      // some buffers and a successful checkpoint
      /* 0 */ buffer(0),
      buffer(2),
      buffer(0),
      /* 3 */ barrier(1, 1),
      barrier(1, 2),
      /* 5 */ buffer(0),
      /* 6 */ barrier(1, 0),
      /* 7 */ buffer(0),
      buffer(2),
      // aborted on last barrier
      /* 9 */ barrier(2, 0),
      barrier(2, 2),
      /* 11 */ buffer(1),
      /* 12 */ cancel(2, 1),
      // successful checkpoint
      /* 13 */ buffer(2),
      buffer(1),
      /* 15 */ barrier(3, 1),
      barrier(3, 2),
      barrier(3, 0),
      // abort on first barrier
      /* 18 */ buffer(0),
      buffer(1),
      /* 20 */ cancel(4, 1),
      barrier(4, 2),
      /* 22 */ buffer(2),
      /* 23 */ barrier(4, 0),
      // another successful checkpoint
      /* 24 */ buffer(0),
      buffer(1),
      buffer(2),
      /* 27 */ barrier(5, 2),
      barrier(5, 1),
      barrier(5, 0),
      /* 30 */ buffer(0),
      buffer(1),
      // abort multiple cancellations and a barrier after the cancellations
      /* 32 */ cancel(6, 1),
      cancel(6, 2),
      /* 34 */ barrier(6, 0),
      /* 35 */ buffer(0),
    ]);
    check(f, 0, 2);
    f.task.nextExpectedCheckpointId = 1n;
    check(f, 3);
    expect(f.gate.getBlockedChannels()).toEqual([1]);
    check(f, 4);
    expect(f.gate.getBlockedChannels()).toEqual([1, 2]);
    check(f, 5, 6);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 7, 8);
    check(f, 9);
    expect(f.gate.getBlockedChannels()).toEqual([0]);
    check(f, 10);
    expect(f.gate.getBlockedChannels()).toEqual([0, 2]);
    check(f, 11, 12);
    expect(f.task.lastCanceledCheckpointId).toBe(2n);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    expect(f.task.lastReason).toBe(
      CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
    );
    check(f, 13, 14);
    f.task.nextExpectedCheckpointId = 3n;
    check(f, 15, 17);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 18, 19);
    check(f, 20);
    expect(f.task.lastCanceledCheckpointId).toBe(4n);
    expect(f.handler.getAlignmentDurationNanos()).toBe(0);
    check(f, 21);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 22, 23);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 24, 26);
    f.task.nextExpectedCheckpointId = 5n;
    check(f, 27, 29);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 30, 31);
    check(f, 32, 33);
    expect(f.task.lastCanceledCheckpointId).toBe(6n);
    expect(f.handler.getAlignmentDurationNanos()).toBe(0);
    check(f, 34);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 35);
    expect(f.task.triggered).toEqual([1n, 3n, 5n]);
    expect(f.task.aborted).toEqual([2n, 4n, 6n]);
  });

  it("ignores a late barrier of a cancelled checkpoint and resumes its channel at once", () => {
    const f = setUp(3, [
      // starting a checkpoint
      /*  0 */ buffer(1),
      /*  1 */ barrier(1, 1),
      /*  2 */ buffer(2),
      buffer(0),
      // cancel the initial checkpoint
      /*  4 */ cancel(1, 0),
      // receiving a buffer
      /*  5 */ buffer(1),
      // starting a new checkpoint
      /*  6 */ barrier(2, 1),
      // some more buffers
      /*  7 */ buffer(2),
      buffer(0),
      // ignored barrier - already canceled and moved to next checkpoint
      /* 9 */ barrier(1, 2),
      // some more buffers
      /* 10 */ buffer(0),
      buffer(2),
      // complete next checkpoint regularly
      /* 12 */ barrier(2, 0),
      barrier(2, 2),
      // some more buffers
      /* 14 */ buffer(0),
      buffer(1),
      buffer(2),
    ]);
    check(f, 0, 3);
    check(f, 4, 5);
    expect(f.task.lastCanceledCheckpointId).toBe(1n);
    expect(f.task.lastReason).toBe(
      CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
    );
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 6, 8);
    check(f, 9);
    expect(f.gate.getBlockedChannels()).toEqual([1]);
    check(f, 10, 11);
    f.task.nextExpectedCheckpointId = 2n;
    check(f, 12, 13);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 14, 16);
    expect(f.task.triggered).toEqual([2n]);
    expect(f.task.aborted).toEqual([1n]);
  });

  it("ignores a cancellation marker of a checkpoint a newer barrier already subsumed", () => {
    const f = setUp(3, [
      // starting a checkpoint
      /*  0 */ buffer(2),
      /*  1 */ barrier(3, 1),
      barrier(3, 0),
      /*  3 */ buffer(2),
      // newer checkpoint barrier cancels/subsumes pending checkpoint
      /*  4 */ barrier(5, 2),
      // some queued buffers
      /*  5 */ buffer(1),
      buffer(0),
      // cancel barrier the initial checkpoint /it is already canceled)
      /* 7 */ cancel(3, 0),
      // some more buffers
      /* 8 */ buffer(0),
      buffer(1),
      // complete next checkpoint regularly
      /* 10 */ barrier(5, 0),
      barrier(5, 1),
      // some more buffers
      /* 12 */ buffer(0),
      buffer(1),
      buffer(2),
    ]);
    check(f, 0, 3);
    expect(f.gate.getBlockedChannels()).toEqual([0, 1]);
    check(f, 4);
    expect(f.task.lastCanceledCheckpointId).toBe(3n);
    expect(f.task.lastReason).toBe(CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED);
    expect(f.gate.getBlockedChannels()).toEqual([2]);
    check(f, 5, 9);
    f.task.nextExpectedCheckpointId = 5n;
    check(f, 10, 11);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    check(f, 12, 14);
    expect(f.task.triggered).toEqual([5n]);
    expect(f.task.aborted).toEqual([3n]);
  });

  it("triggers a checkpoint whose last awaited channel ends instead of delivering the barrier", () => {
    const f = setUp(3, [barrier(1, 0), barrier(1, 1), endOfPartition(2)]);
    checkAll(f);
    expect(f.task.triggered).toEqual([1n]);
    expect(f.task.aborted).toEqual([]);
    expect(f.handler.isCheckpointPending()).toBe(false);
    expect(f.gate.getBlockedChannels()).toEqual([]);
  });

  it("counts a channel that delivered the barrier and then ended only once", () => {
    // Driven directly: a real producer stays blocked after its aligned barrier, so only a
    // permissive input lets a channel end behind its barrier.
    const resumed: number[] = [];
    const task = new ValidatingCheckpointableTask();
    const handler = new SingleCheckpointBarrierHandler({
      taskName: "t",
      inputs: [{ numberOfInputChannels: 3, resumeConsumption: (c) => resumed.push(c) }],
      task,
    });
    const at = (channelIndex: number) => ({ gateIndex: 0, channelIndex });
    handler.processBarrier(new CheckpointBarrier(2n, 0n), at(0));
    handler.processBarrier(new CheckpointBarrier(2n, 0n), at(1));
    handler.processEndOfPartition(at(1));
    expect(task.triggered).toEqual([]);
    expect(task.aborted).toEqual([]);
    handler.processBarrier(new CheckpointBarrier(2n, 0n), at(2));
    expect(task.triggered).toEqual([2n]);
    expect(handler.isCheckpointPending()).toBe(false);
    // The ended channel is not resumed: its resources are gone.
    expect(resumed.sort()).toEqual([0, 2]);
  });

  it("triggers later checkpoints over the channels still open after some ended", () => {
    const f = setUp(3, [
      endOfPartition(2),
      barrier(6, 0),
      barrier(6, 1),
      endOfPartition(1),
      barrier(7, 0),
    ]);
    checkAll(f);
    expect(f.task.triggered).toEqual([6n, 7n]);
    expect(f.task.aborted).toEqual([]);
    expect(f.handler.isCheckpointPending()).toBe(false);
  });

  it("aborts the pending checkpoint on a marker for it, and on a newer marker moves on to that id", () => {
    for (const cancelledOffset of [0n, 1n]) {
      const resumed: number[] = [];
      const task = new ValidatingCheckpointableTask();
      const handler = new SingleCheckpointBarrierHandler({
        taskName: "t",
        inputs: [{ numberOfInputChannels: 2, resumeConsumption: (c) => resumed.push(c) }],
        task,
      });
      handler.processBarrier(new CheckpointBarrier(10n, 0n), { gateIndex: 0, channelIndex: 0 });
      expect(handler.isCheckpointPending()).toBe(true);
      const cancelled = 10n + cancelledOffset;
      handler.processCancellationBarrier(
        { kind: "CancelCheckpointMarker", checkpointId: cancelled },
        { gateIndex: 0, channelIndex: 1 },
      );
      expect(handler.isCheckpointPending()).toBe(false);
      expect(handler.getLatestCheckpointId()).toBe(cancelled);
      expect(task.aborted).toEqual([cancelled]);
      expect(resumed).toEqual([0]);
      handler.processCancellationBarrier(
        { kind: "CancelCheckpointMarker", checkpointId: cancelled + 1n },
        { gateIndex: 0, channelIndex: 1 },
      );
      expect(handler.getLatestCheckpointId()).toBe(cancelled + 1n);
      expect(task.aborted).toEqual([cancelled, cancelled + 1n]);
    }
  });

  it("never starts a checkpoint whose cancellation marker came before its first barrier", () => {
    const gate = new ScriptedInputGate(1, [cancel(10, 0), barrier(10, 0)]);
    const task = new ValidatingCheckpointableTask();
    const handler = new SingleCheckpointBarrierHandler({ taskName: "t", inputs: [gate], task });
    const input = new CheckpointedInputGate([gate], handler);
    input.pollNext();
    expect(handler.isCheckpointPending()).toBe(false);
    expect(handler.getLatestCheckpointId()).toBe(10n);
    expect(task.aborted).toEqual([10n]);
    input.pollNext();
    expect(handler.isCheckpointPending()).toBe(false);
    expect(task.triggered).toEqual([]);
    expect(gate.getBlockedChannels()).toEqual([]);
  });

  it("rejects an at-least-once barrier, naming the channel", () => {
    const gate = new ScriptedInputGate(2);
    const handler = new SingleCheckpointBarrierHandler({
      taskName: "t",
      inputs: [gate],
      task: new ValidatingCheckpointableTask(),
    });
    const atLeastOnce = new CheckpointBarrier(1n, 0n, {
      ...DEFAULT_CHECKPOINT_OPTIONS,
      alignment: CheckpointAlignment.AT_LEAST_ONCE,
    });
    expect(() => handler.processBarrier(atLeastOnce, { gateIndex: 0, channelIndex: 1 })).toThrow(
      /channel 1 of gate 0 is not an exactly-once barrier/,
    );
  });

  it("rejects events of a channel that already ended and of channels that do not exist", () => {
    const gate = new ScriptedInputGate(2);
    const handler = new SingleCheckpointBarrierHandler({
      taskName: "t",
      inputs: [gate],
      task: new ValidatingCheckpointableTask(),
    });
    handler.processEndOfPartition({ gateIndex: 0, channelIndex: 1 });
    expect(() => handler.processEndOfPartition({ gateIndex: 0, channelIndex: 1 })).toThrow(
      expect.objectContaining({ code: "SLUICE_ERR_ILLEGAL_STATE" }),
    );
    expect(() =>
      handler.processBarrier(new CheckpointBarrier(1n, 0n), { gateIndex: 1, channelIndex: 0 }),
    ).toThrow(expect.objectContaining({ code: "SLUICE_ERR_INVALID_ARGUMENT" }));
  });
});
