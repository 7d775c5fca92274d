import { ExecutionAttemptID, JobID, NetworkBufferPool, StringSerializer } from "@sluice/core";
import type { PipelinedResultPartition, SingleInputGate } from "@sluice/network/plugin";
import { PollStatus, RecordReader } from "../../io/record-reader.js";
import { createRecordWriter, type RecordWriter } from "../../io/record-writer.js";
import { wireLocalPartition } from "../../io/test-support/local-wiring.js";
import { CheckpointingMode } from "../../messages/checkpointing-mode.js";
import type { FileStateHandle } from "../../messages/file-state-handle.js";
import { ForwardPartitioner } from "../../partitioner/forward-partitioner.js";
import { ChannelStateSerializer } from "../channel-state-serializer.js";
import { CheckpointedInputGate } from "../checkpointed-input-gate.js";
import { SingleCheckpointBarrierHandler } from "../single-checkpoint-barrier-handler.js";
import { SubtaskCheckpointCoordinator } from "../subtask-checkpoint-coordinator.js";
import { EMPTY_CHANNEL_STATE, type TaskChannelState } from "../task-channel-state.js";

const SEGMENT = 64;

/** Record `index` of a run: its index, then `size` filler characters. */
export function record(index: number, size: number): string {
  return `${index}:${"x".repeat(size)}`;
}

/**
 * One attempt of two tasks over a local channel with small buffers, so the producer ("Source")
 * is back-pressured and records span buffers: both with a checkpoint coordinator whose unaligned
 * checkpoints have `alignedCheckpointTimeoutMs` (0: unaligned from the start), the consumer
 * ("Sink") reading through a barrier handler. Each task's snapshot is the count of records it
 * emitted or processed; what each persisted goes through the channel state file layout.
 */
export class LocalCheckpointAttempt {
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
  private readonly alignedCheckpointTimeoutMs: number;

  constructor(
    restoredInput: TaskChannelState = EMPTY_CHANNEL_STATE,
    alignedCheckpointTimeoutMs = 0,
  ) {
    this.alignedCheckpointTimeoutMs = alignedCheckpointTimeoutMs;
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
      unaligned: { alignedCheckpointTimeoutMs: this.alignedCheckpointTimeoutMs },
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
