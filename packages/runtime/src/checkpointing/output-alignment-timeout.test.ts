import type { NetworkBufferPool } from "@sluice/core";
import { waitFor } from "@sluice/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { channelStateSize, EMPTY_CHANNEL_STATE } from "./task-channel-state.js";
import { LocalCheckpointAttempt, record } from "./test-support/local-checkpoint-attempt.js";

// The output side of the aligned-checkpoint timeout over a local channel (which reads the
// producer's subpartition queue directly): a source's timeoutable aligned barrier waits in its
// back-pressured output, turns unaligned once the timeout passed since the checkpoint started,
// overtakes the queued data, and that data becomes the source's output channel state.

/** Payload lengths: records span the 64-byte buffers of the attempt's small pools. */
const SIZES = Array.from({ length: 60 }, (_, i) => (i * 17) % 90);
const EXPECTED = SIZES.map((size, i) => record(i, size));

const pools: NetworkBufferPool[] = [];

afterEach(() => {
  for (const pool of pools.splice(0)) pool.destroy();
});

function attempt(...args: ConstructorParameters<typeof LocalCheckpointAttempt>) {
  const created = new LocalCheckpointAttempt(...args);
  pools.push(created.pool);
  return created;
}

/** Emits records without reading until the output is back-pressured; returns how many. */
async function fillOutput(run: LocalCheckpointAttempt): Promise<number> {
  let i = 0;
  while (run.writer.isAvailable() && i < SIZES.length) {
    run.writer.emit(record(i, SIZES[i] as number));
    run.emitted = ++i;
  }
  run.writer.flushAll();
  // A source triggers between records, not while one waits for buffers.
  while (run.partition.hasPendingRecord()) {
    if (run.read(1) === 0) await run.partition.getAvailableFuture();
  }
  return i;
}

describe("the output-side alignment timeout over a local channel", () => {
  it("turns a barrier stuck in the back-pressured output unaligned at the timeout; it reaches the consumer before the queued records, which are the source's channel state and reach the consumer exactly once after a restore", async () => {
    const first = attempt(undefined, 50);
    const emittedBefore = await fillOutput(first);
    const queuedBytes = first.partition.getNumberOfQueuedBytes();
    expect(queuedBytes).toBeGreaterThan(0);
    // What the source still holds queued when the sink snapshots (at the barrier).
    let queuedAtSinkSnapshot: number | undefined;
    first.consumer.setCheckpointHandler({
      snapshotState: () => {
        queuedAtSinkSnapshot = first.partition.getNumberOfQueuedBytes();
        return first.processed.length;
      },
    });
    first.producer.triggerCheckpoint(1n, BigInt(Date.now()));
    // Aligned until the timeout: one timer for the checkpoint.
    expect(first.partition.getPendingAlignmentTimeouts()).toEqual([1n]);
    await waitFor(() => first.partition.getPendingAlignmentTimeouts().length === 0, {
      what: "the timeout",
      timeoutMs: 20_000,
    });

    // The barrier now heads the queue: the sink snapshots before it took any queued buffer.
    let polls = 0;
    while (first.handler.getLatestCheckpointId() < 1n) {
      first.read(1);
      expect(++polls).toBeLessThan(10_000);
    }
    expect(queuedAtSinkSnapshot).toBe(queuedBytes);
    first.read(5);
    await first.producer.waitForPendingCheckpoints();
    await first.consumer.waitForPendingCheckpoints();
    const source = first.persisted.get("Source");
    const sink = first.persisted.get("Sink");
    expect(source?.state).toBe(emittedBefore);
    const processedAtSnapshot = sink?.state as number;
    expect(processedAtSnapshot).toBeLessThan(emittedBefore);
    // Everything that was queued behind the barrier is the source's output state.
    expect(channelStateSize(source?.channelState ?? EMPTY_CHANNEL_STATE)).toBe(queuedBytes);
    expect(first.producer.lastCheckpoint?.persistedDataBytes).toBe(queuedBytes);
    const processedBefore = first.processed.slice(0, processedAtSnapshot);
    await first.close();

    // The restart: the source re-emits its output state, then goes on from its offset.
    const second = attempt(sink?.channelState, 50);
    for (const { info, data } of source?.channelState.resultSubpartitionState ?? []) {
      while (!second.partition.isAvailable()) {
        second.writer.flushAll();
        if (second.read(2) === 0) await second.partition.getAvailableFuture();
      }
      second.partition.addRecoveredState(info.subpartitionIndex, data);
    }
    const producing = (async () => {
      await second.emit(SIZES, emittedBefore, SIZES.length, 2);
      while (!second.partition.isAvailable()) await second.partition.getAvailableFuture();
      second.writer.flushAll();
      second.partition.finish();
    })();
    await Promise.all([producing, second.drain()]);
    await second.close();
    expect([...processedBefore, ...second.processed]).toEqual(EXPECTED);
    for (const run of [first, second]) expect(run.pool).toHaveAllSegmentsAvailable();
    expect(second.partition.getPendingAlignmentTimeouts()).toEqual([]);
  });

  it("keeps a checkpoint whose barrier leaves the output before the timeout aligned: no channel state, no timer left", async () => {
    const run = attempt(undefined, 60_000);
    await fillOutput(run);
    run.producer.triggerCheckpoint(1n, BigInt(Date.now()));
    expect(run.partition.getPendingAlignmentTimeouts()).toEqual([1n]);
    let polls = 0;
    while (run.handler.getLatestCheckpointId() < 1n) {
      run.read(1);
      expect(++polls).toBeLessThan(10_000);
    }
    // The consumer read every record queued before the barrier first.
    expect(run.processed.length).toBe(run.emitted);
    expect(run.partition.getPendingAlignmentTimeouts()).toEqual([]);
    await run.producer.waitForPendingCheckpoints();
    await run.consumer.waitForPendingCheckpoints();
    expect(run.producer.lastCheckpoint?.checkpointId).toBe(1n);
    expect(run.producer.lastCheckpoint?.persistedDataBytes).toBe(0);
    expect(run.persisted.get("Source")?.channelState.resultSubpartitionState).toEqual([]);
    await run.close();
    expect(run.pool).toHaveAllSegmentsAvailable();
  });

  it("still completes a checkpoint whose barrier waits in the output when the producer's inputs close, instead of declining it", async () => {
    const run = attempt(undefined, 50);
    await fillOutput(run);
    const queuedBytes = run.partition.getNumberOfQueuedBytes();
    run.producer.triggerCheckpoint(1n, BigInt(Date.now()));
    // The task's inputs end (as when it finishes) while its barrier is still queued.
    run.producer.closeChannelState();
    await run.producer.waitForPendingCheckpoints();
    expect(run.producer.lastCheckpoint?.checkpointId).toBe(1n);
    expect(run.producer.lastCheckpoint?.persistedDataBytes).toBe(queuedBytes);
    await run.close();
    expect(run.pool).toHaveAllSegmentsAvailable();
  });
});
