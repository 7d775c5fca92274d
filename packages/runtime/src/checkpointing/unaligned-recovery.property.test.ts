import {
  CheckpointAlignment,
  CheckpointBarrier,
  DEFAULT_CHECKPOINT_OPTIONS,
  ExecutionAttemptID,
  JobID,
  NetworkBufferPool,
  StringSerializer,
} from "@sluice/core";
import "@sluice/core/testing";
import type { PipelinedResultPartition, SingleInputGate } from "@sluice/network";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { PollStatus, RecordReader } from "../io/record-reader.js";
import { createRecordWriter, type RecordWriter } from "../io/record-writer.js";
import { wireLocalPartition } from "../io/test-support/local-wiring.js";
import { CheckpointingMode } from "../messages/checkpointing-mode.js";
import type { FileStateHandle } from "../messages/file-state-handle.js";
import { ForwardPartitioner } from "../partitioner/forward-partitioner.js";
import { ChannelStateSerializer } from "./channel-state-serializer.js";
import { CheckpointedInputGate } from "./checkpointed-input-gate.js";
import { SingleCheckpointBarrierHandler } from "./single-checkpoint-barrier-handler.js";
import { SubtaskCheckpointCoordinator } from "./subtask-checkpoint-coordinator.js";
import { EMPTY_CHANNEL_STATE, type TaskChannelState } from "./task-channel-state.js";

// Restoring an unaligned checkpoint and reading on must yield exactly the records a run without
// failure yields. A producer and a consumer share one local channel over small buffers, so the
// producer is back-pressured and records span buffers; at a random moment (the consumer possibly
// inside a record) the producer takes an unaligned checkpoint whose priority barrier overtakes
// its queue, the consumer snapshots at that barrier, the run "fails", and both restart from the
// checkpoint's state and channel state.

const RUNS = Number(process.env.SLUICE_FUZZ_RUNS ?? 60);
const SEGMENT = 64;

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

function record(index: number, size: number): string {
  return `${index}:${"x".repeat(size)}`;
}

/** One attempt of the two tasks over a local channel. */
class Attempt {
  readonly pool = new NetworkBufferPool(64, SEGMENT);
  readonly partition: PipelinedResultPartition;
  readonly writer: RecordWriter<string>;
  readonly gate: SingleInputGate;
  readonly input: CheckpointedInputGate;
  readonly handler: SingleCheckpointBarrierHandler;
  readonly reader: RecordReader<string>;
  readonly producer: SubtaskCheckpointCoordinator;
  readonly consumer: SubtaskCheckpointCoordinator;
  readonly processed: string[] = [];
  /** What each task persisted, by task. */
  readonly persisted = new Map<string, { state: unknown; channelState: TaskChannelState }>();
  emitted = 0;

  constructor(restoredInput: TaskChannelState = EMPTY_CHANNEL_STATE) {
    pools.push(this.pool);
    // Few buffers: the producer is back-pressured and its queue holds in-flight data.
    ({ partition: this.partition, gate: this.gate } = wireLocalPartition(this.pool, {
      channels: 1,
      partitionBuffers: [3, 3],
      gateBuffers: [1, 2],
      producerName: "Source",
      consumerName: "Sink",
      backoff: { initialMs: 1, maxMs: 1 },
    }));
    this.writer = createRecordWriter(
      this.partition,
      StringSerializer.INSTANCE,
      new ForwardPartitioner<string>(),
      { taskName: "Source", bufferTimeout: { kind: "disabled" } },
    );
    this.producer = this.coordinator("Source", () => this.emitted);
    this.consumer = this.coordinator("Sink", () => this.processed.length);
    this.producer.setOutputs([this.writer as RecordWriter<unknown>]);
    this.partition.setChannelStateWriter(this.producer.channelStateWriter);
    this.gate.setChannelStateWriter(this.consumer.channelStateWriter);
    const handler = new SingleCheckpointBarrierHandler({
      taskName: "Sink",
      inputs: [this.gate],
      task: this.consumer,
    });
    this.handler = handler;
    this.input = new CheckpointedInputGate([this.gate], handler);
    this.input.setRecoveredState(restoredInput.inputChannelState);
    this.reader = new RecordReader(this.input, StringSerializer.INSTANCE);
    this.consumer.setInputs([this.gate], (checkpointId) =>
      this.reader.prepareSnapshot(this.consumer.channelStateWriter, checkpointId, (channel) =>
        this.input.getChannelInfo(channel),
      ),
    );
  }

  private coordinator(name: string, state: () => number): SubtaskCheckpointCoordinator {
    const coordinator = new SubtaskCheckpointCoordinator({
      jobId: new JobID(),
      executionAttemptId: new ExecutionAttemptID(),
      taskName: name,
      mode: CheckpointingMode.EXACTLY_ONCE,
      unaligned: { alignedCheckpointTimeoutMs: 0 },
      persist: async (_id, stateJson, channelState): Promise<FileStateHandle> => {
        // Through the file layout, as a restore reads it.
        const bytes = ChannelStateSerializer.serialize(channelState);
        this.persisted.set(name, {
          state: stateJson === undefined ? undefined : JSON.parse(stateJson),
          channelState: ChannelStateSerializer.deserialize(bytes, name),
        });
        return { path: name, size: bytes.length };
      },
      discard: async () => {},
      acknowledge: () => {},
      decline: (decline) => {
        throw new Error(`${name} declined checkpoint ${decline.checkpointId}: ${decline.reason}`);
      },
    });
    coordinator.setCheckpointHandler({ snapshotState: () => state() });
    return coordinator;
  }

  /** Reads up to `max` records now; returns how many. */
  read(max: number): number {
    let count = 0;
    this.reader.pollRecords((value) => {
      this.processed.push(value);
      count++;
    }, max);
    return count;
  }

  /** Emits records `from..to` (exclusive), reading in batches while back-pressured. */
  async emit(sizes: readonly number[], from: number, to: number, readBatch: number) {
    for (let i = from; i < to; i++) {
      while (!this.writer.isAvailable()) {
        this.writer.flushAll();
        if (this.read(readBatch) === 0) await this.writer.getAvailableFuture();
      }
      this.writer.emit(record(i, sizes[i] as number));
      this.emitted = i + 1;
    }
  }

  /** Reads everything until the end of the input. */
  async drain(): Promise<void> {
    for (;;) {
      const status = this.reader.pollRecords((value) => this.processed.push(value));
      if (status === PollStatus.END_OF_INPUT) return;
      if (status === PollStatus.NOTHING_AVAILABLE) await this.reader.getAvailableFuture();
    }
  }

  async close(): Promise<void> {
    this.reader.close();
    this.partition.release();
    this.partition.close();
    await this.gate.close();
  }
}

describe("unaligned checkpoint recovery (property)", () => {
  it("restoring channel state and reading on yields exactly the records of a run without failure", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const { sizes } = scenario;
        const expected = sizes.map((size, i) => record(i, size));

        // The first attempt, up to the checkpoint and a little beyond.
        const first = new Attempt();
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
        const second = new Attempt(sink?.channelState);
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
