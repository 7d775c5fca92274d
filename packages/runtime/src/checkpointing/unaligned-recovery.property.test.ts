import {
  CheckpointAlignment,
  CheckpointBarrier,
  DEFAULT_CHECKPOINT_OPTIONS,
  type NetworkBufferPool,
} from "@sluice/core";
import "@sluice/core/testing";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { LocalCheckpointAttempt, record } from "./test-support/local-checkpoint-attempt.js";

// Restoring an unaligned checkpoint and reading on must yield exactly the records a run without
// failure yields. A producer and a consumer share one local channel over small buffers, so the
// producer is back-pressured and records span buffers; at a random moment (the consumer possibly
// inside a record) the producer takes an unaligned checkpoint whose priority barrier overtakes
// its queue, the consumer snapshots at that barrier, the run "fails", and both restart from the
// checkpoint's state and channel state.

const RUNS = Number(process.env.SLUICE_FUZZ_RUNS ?? 60);
const pools: NetworkBufferPool[] = [];

afterEach(() => {
  // A failed run leaves its pools; destroy them so the next test starts clean.
  for (const pool of pools.splice(0)) pool.destroy();
});

interface Scenario {
  /** Payload lengths of the records (the whole run). */
  readonly sizes: readonly number[];
  /** Records the producer emits before the checkpoint. */
  readonly emittedBefore: number;
  /** How many records the consumer takes per poll while the producer waits. */
  readonly readBatch: number;
  /** Records the consumer reads after the producer stopped and before the checkpoint. */
  readonly readBeforeBarrier: number;
  /** Records the consumer reads after its snapshot, before the failure (lost, redone). */
  readonly readAfterBarrier: number;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc
  .array(fc.integer({ min: 0, max: 150 }), { minLength: 1, maxLength: 40 })
  .chain((sizes) =>
    fc.record({
      sizes: fc.constant(sizes),
      emittedBefore: fc.integer({ min: 0, max: sizes.length }),
      readBatch: fc.integer({ min: 1, max: 4 }),
      readBeforeBarrier: fc.integer({ min: 0, max: 6 }),
      readAfterBarrier: fc.integer({ min: 0, max: 6 }),
    }),
  );

describe("unaligned checkpoint recovery (property)", () => {
  it("restoring channel state and reading on yields exactly the records of a run without failure", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const { sizes } = scenario;
        const expected = sizes.map((size, i) => record(i, size));

        // The first attempt, up to the checkpoint and a little beyond.
        const first = new LocalCheckpointAttempt();
        pools.push(first.pool);
        await first.emit(sizes, 0, scenario.emittedBefore, scenario.readBatch);
        first.writer.flushAll();
        first.read(scenario.readBeforeBarrier);
        // A source runs its trigger between records: not while one waits for buffers.
        while (first.partition.hasPendingRecord()) {
          if (first.read(scenario.readBatch) === 0) await first.partition.getAvailableFuture();
        }
        const barrier = new CheckpointBarrier(1n, BigInt(Date.now()), {
          ...DEFAULT_CHECKPOINT_OPTIONS,
          alignment: CheckpointAlignment.UNALIGNED,
        });
        // The source's trigger: between two records, however back-pressured it is.
        first.producer.triggerCheckpoint(barrier.id, barrier.timestamp);
        // The priority barrier overtakes the queue: the consumer meets it as soon as it has
        // finished the buffer it is reading.
        let polls = 0;
        while (first.handler.getLatestCheckpointId() < 1n) {
          first.read(1);
          expect(++polls).toBeLessThan(10_000);
        }
        first.read(scenario.readAfterBarrier);
        await first.producer.waitForPendingCheckpoints();
        await first.consumer.waitForPendingCheckpoints();
        const source = first.persisted.get("Source");
        const sink = first.persisted.get("Sink");
        expect(source?.state).toBe(scenario.emittedBefore);
        expect(sink).toBeDefined();
        const consumedBefore = sink?.state as number;
        const processedBefore = first.processed.slice(0, consumedBefore);
        await first.close();

        // The restart: the sink replays its input state, the source re-emits its output state
        // and then goes on from its offset.
        const second = new LocalCheckpointAttempt(sink?.channelState);
        pools.push(second.pool);
        for (const { info, data } of source?.channelState.resultSubpartitionState ?? []) {
          while (!second.partition.isAvailable()) {
            second.writer.flushAll();
            if (second.read(scenario.readBatch) === 0) await second.partition.getAvailableFuture();
          }
          second.partition.addRecoveredState(info.subpartitionIndex, data);
        }
        const producing = (async () => {
          await second.emit(sizes, scenario.emittedBefore, sizes.length, scenario.readBatch);
          while (!second.partition.isAvailable()) await second.partition.getAvailableFuture();
          second.writer.flushAll();
          second.partition.finish();
        })();
        await Promise.all([producing, second.drain()]);
        await second.close();
        for (const attempt of [first, second]) {
          expect(attempt.pool).toHaveAllSegmentsAvailable();
          attempt.pool.destroy();
        }

        expect([...processedBefore, ...second.processed]).toEqual(expected);
      }),
      { numRuns: RUNS },
    );
  });
});
