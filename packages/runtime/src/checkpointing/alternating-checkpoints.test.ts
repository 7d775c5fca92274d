import { CheckpointAlignment } from "@sluice/core";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import { CheckpointedInputGate } from "./checkpointed-input-gate.js";
import { SingleCheckpointBarrierHandler } from "./single-checkpoint-barrier-handler.js";
import {
  announcement,
  buffer,
  cancel,
  ScriptedInputGate,
  timeoutableBarrier,
} from "./test-support/scripted-input-gate.js";
import { ValidatingCheckpointableTask } from "./test-support/validating-checkpointable-task.js";

// Ported case by case from Flink's AlternatingCheckpointsTest (its facts, not its code): a
// timeoutable aligned checkpoint turns unaligned when its alignment takes longer than the
// barrier's timeout; the announced barriers then move ahead of their data, held channels resume
// and the checkpoint triggers. The timer only marks the timeout; the switch happens in a poll.

const TIMEOUT = 100;

interface Fixture {
  readonly gate: ScriptedInputGate;
  readonly task: ValidatingCheckpointableTask;
  readonly handler: SingleCheckpointBarrierHandler;
  readonly input: CheckpointedInputGate;
}

let current: Fixture | undefined;

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(async () => {
  vi.useRealTimers();
  const fixture = current;
  current = undefined;
  fixture?.handler.close();
  await fixture?.gate.close();
});

function setUp(channels: number): Fixture {
  const gate = new ScriptedInputGate(channels);
  const task = new ValidatingCheckpointableTask();
  const handler = new SingleCheckpointBarrierHandler({ taskName: "test", inputs: [gate], task });
  current = { gate, task, handler, input: new CheckpointedInputGate([gate], handler) };
  return current;
}

function pollAll(f: Fixture): void {
  for (let next = f.input.pollNext(); next !== undefined; next = f.input.pollNext()) {
    // Announcements are the handler's; they never reach the reader.
    expect(next.event?.kind).not.toBe("EventAnnouncement");
  }
}

describe("SingleCheckpointBarrierHandler alignment timeout, from Flink's AlternatingCheckpointsTest", () => {
  it("testTimeoutAlignment: a slow alignment turns unaligned and moves the announced barrier ahead", () => {
    const f = setUp(2);
    f.gate.add(timeoutableBarrier(1, 0, TIMEOUT), announcement(1, 1, 7, TIMEOUT), buffer(1));
    pollAll(f);
    expect(f.task.triggered).toEqual([]);
    expect(f.gate.getBlockedChannels()).toEqual([0]);
    vi.advanceTimersByTime(TIMEOUT);
    expect(f.handler.hasPendingAlignmentTimeout()).toBe(true);
    expect(f.input.isAvailable()).toBe(true);
    // The next poll switches: channel 1's barrier (buffer 7) is moved ahead of its data, the
    // checkpoint triggers unaligned and channel 0 resumes.
    pollAll(f);
    expect(f.gate.conversions).toEqual(["1:7"]);
    expect(f.task.triggered).toEqual([1n]);
    expect(f.task.triggeredBarriers[0]?.options.alignment).toBe(CheckpointAlignment.UNALIGNED);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    expect(f.task.inputsComplete).toEqual([]);
    // The moved barrier arrives (it still blocked its channel upstream): resumed, input complete.
    f.gate.add(timeoutableBarrier(1, 1, TIMEOUT), buffer(1));
    pollAll(f);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    expect(f.task.inputsComplete).toEqual([1n]);
    expect(f.task.triggered).toEqual([1n]);
  });

  it("testAllChannelsUnblockedAfterAlignmentTimeout", () => {
    const f = setUp(3);
    f.gate.add(timeoutableBarrier(1, 0, TIMEOUT), timeoutableBarrier(1, 1, TIMEOUT));
    pollAll(f);
    expect(f.gate.getBlockedChannels()).toEqual([0, 1]);
    vi.advanceTimersByTime(TIMEOUT);
    pollAll(f);
    expect(f.gate.getBlockedChannels()).toEqual([]);
    expect(f.gate.resumes).toBe(2);
    f.gate.add(timeoutableBarrier(1, 2, TIMEOUT));
    pollAll(f);
    expect(f.task.inputsComplete).toEqual([1n]);
  });

  it("testPassiveTimeoutAlignmentOnAnnouncement: announcements alone start the timer", () => {
    const f = setUp(2);
    f.gate.add(announcement(1, 0, 3, TIMEOUT), announcement(1, 1, 5, TIMEOUT));
    pollAll(f);
    expect(f.handler.isCheckpointPending()).toBe(true);
    vi.advanceTimersByTime(TIMEOUT);
    pollAll(f);
    expect(f.gate.conversions).toEqual(["0:3", "1:5"]);
    expect(f.task.triggered).toEqual([1n]);
  });

  it("testActiveTimeoutAfterAnnouncementProcessing: after the switch, announcements convert at once", () => {
    const f = setUp(3);
    f.gate.add(timeoutableBarrier(1, 0, TIMEOUT));
    pollAll(f);
    vi.advanceTimersByTime(TIMEOUT);
    pollAll(f);
    expect(f.task.triggered).toEqual([1n]);
    f.gate.add(announcement(1, 2, 9, TIMEOUT));
    pollAll(f);
    expect(f.gate.conversions).toEqual(["2:9"]);
  });

  it("testAlignedNeverTimeoutableCheckpoint: without a timeout a checkpoint stays aligned", () => {
    const f = setUp(2);
    f.gate.add(timeoutableBarrier(1, 0, 0));
    pollAll(f);
    vi.advanceTimersByTime(60_000);
    pollAll(f);
    expect(f.task.triggered).toEqual([]);
    expect(f.gate.getBlockedChannels()).toEqual([0]);
    f.gate.add(timeoutableBarrier(1, 1, 0));
    pollAll(f);
    expect(f.task.triggered).toEqual([1n]);
    expect(f.task.triggeredBarriers[0]?.options.alignment).toBe(CheckpointAlignment.ALIGNED);
  });

  it("testNoActiveTimeoutAlignmentAfterLastBarrier: an alignment done in time stays aligned", () => {
    const f = setUp(2);
    f.gate.add(timeoutableBarrier(1, 0, TIMEOUT), timeoutableBarrier(1, 1, TIMEOUT));
    pollAll(f);
    expect(f.task.triggeredBarriers[0]?.options.alignment).toBe(CheckpointAlignment.ALIGNED);
    vi.advanceTimersByTime(TIMEOUT * 2);
    expect(f.handler.hasPendingAlignmentTimeout()).toBe(false);
    pollAll(f);
    expect(f.task.triggered).toEqual([1n]);
  });

  it("testNoActiveTimeoutAlignmentAfterAbort: an aborted alignment does not time out", () => {
    const f = setUp(2);
    f.gate.add(timeoutableBarrier(1, 0, TIMEOUT), cancel(1, 1));
    pollAll(f);
    expect(f.task.lastReason).toBe(
      CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
    );
    vi.advanceTimersByTime(TIMEOUT * 2);
    expect(f.handler.hasPendingAlignmentTimeout()).toBe(false);
    pollAll(f);
    expect(f.task.triggered).toEqual([]);
  });

  it("testNoActiveTimeoutAlignmentAfterClose: a closed handler does not time out", () => {
    const f = setUp(2);
    f.gate.add(timeoutableBarrier(1, 0, TIMEOUT));
    pollAll(f);
    f.handler.close();
    vi.advanceTimersByTime(TIMEOUT * 2);
    expect(f.handler.hasPendingAlignmentTimeout()).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("testTimeoutAlignmentOnAnnouncementForSecondCheckpoint: a newer checkpoint restarts the timer", () => {
    const f = setUp(2);
    f.gate.add(timeoutableBarrier(1, 0, TIMEOUT));
    pollAll(f);
    vi.advanceTimersByTime(TIMEOUT / 2);
    // Checkpoint 2 subsumes 1; its own alignment gets the full timeout.
    f.gate.add(announcement(2, 1, 4, TIMEOUT));
    pollAll(f);
    expect(f.task.aborted).toEqual([1n]);
    vi.advanceTimersByTime(TIMEOUT / 2);
    expect(f.handler.hasPendingAlignmentTimeout()).toBe(false);
    vi.advanceTimersByTime(TIMEOUT / 2);
    pollAll(f);
    expect(f.gate.conversions).toEqual(["1:4"]);
    expect(f.task.triggered).toEqual([2n]);
  });

  it("wakes an input that waits for data when the alignment times out", async () => {
    const f = setUp(2);
    f.gate.add(timeoutableBarrier(1, 0, TIMEOUT));
    pollAll(f);
    let woken = false;
    void f.handler.getAlignmentTimeoutFuture().then(() => {
      woken = true;
    });
    await vi.advanceTimersByTimeAsync(TIMEOUT);
    expect(woken).toBe(true);
    expect(f.input.hasPriorityEvent()).toBe(true);
  });
});
