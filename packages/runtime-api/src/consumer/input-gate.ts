import type {
  AvailabilityProvider,
  CheckpointBarrier,
  NetworkBuffer,
  RuntimeEvent,
  TaskEvent,
} from "@sluice/core";
import type { ChannelStateWriter } from "../checkpoint/channel-state-writer.js";

/**
 * One item handed out by an {@link InputGate}: a data buffer or an event, with the index of the
 * channel it came from (Flink's `BufferOrEvent`). Exactly one of `buffer` and `event` is set.
 */
export interface BufferOrEvent {
  /** Index of the input channel within its gate, in `[0, numberOfInputChannels)`. */
  channelIndex: number;
  /**
   * A data buffer (serialized records, possibly continuing a record from the previous buffer of
   * this channel). The consumer owns one reference and must `recycleBuffer()` it when done;
   * recycling returns credit to the producer.
   */
  buffer?: NetworkBuffer;
  /** An event (already deserialized), e.g. a checkpoint barrier or `EndOfPartitionEvent`. */
  event?: RuntimeEvent;
  /** True when the gate already has more data queued, so the caller can poll again at once. */
  moreAvailable: boolean;
  /** Bytes this item occupied in the network stack (buffer size or serialized event size). */
  size: number;
  /** True for a priority event (e.g. an unaligned checkpoint barrier) that overtook data. */
  hasPriority?: boolean;
}

/** Live counters of one input gate, read by metric reporting. */
export interface InputGateMetrics {
  /** Bytes received by the gate's channels (buffers and events). */
  readonly numBytesIn: number;
  /** Buffers received by the gate's channels. */
  readonly numBuffersIn: number;
  /** Used fraction of the gate's buffers (exclusive and floating), in [0, 1]. */
  inPoolUsage(): number;
}

/**
 * The consumer side of one consumed result, as a `ShuffleEnvironment` hands it to a task
 * (`createInputGates`; Flink's `IndexedInputGate` / `SingleInputGate`). Implemented by the plugin;
 * called by the task's record reader on the event loop only.
 *
 * Reading is synchronous: `pollNext()` returns the next item or `undefined`; when it returns
 * `undefined` the task awaits `getAvailableFuture()` ({@link AvailabilityProvider}) and polls
 * again. No promise is created per buffer while data flows.
 *
 * Lifecycle: `setup()` → `requestPartitions()` → poll until `isFinished()` → `close()`.
 */
export interface InputGate extends AvailabilityProvider {
  /** Number of input channels, one per consumed subpartition set of one producer. */
  readonly numberOfInputChannels: number;

  /** Acquires the gate's buffers (exclusive and floating). Called once, before any request. */
  setup(): void;

  /**
   * Starts consuming: remote channels send their partition requests (with the initial credit),
   * local channels attach to the producer's subpartition view. Called once after `setup()`;
   * failures surface later through `pollNext()`.
   */
  requestPartitions(): void;

  /**
   * The next buffer or event, fairly across channels, or `undefined` when nothing is available
   * right now (check `isFinished()` to tell "later" from "never").
   *
   * @throws the channel's failure (e.g. `SLUICE_ERR_PRODUCER_FAILED`,
   *   `SLUICE_ERR_PARTITION_NOT_FOUND`, `SLUICE_ERR_REMOTE_TRANSPORT`).
   */
  pollNext(): BufferOrEvent | undefined;

  /** True once every channel delivered its `EndOfPartitionEvent` and everything was polled. */
  isFinished(): boolean;

  /**
   * Unblocks a channel that delivered a blocking event (an aligned checkpoint barrier) once the
   * barrier was aligned or aborted; the producer resumes sending (Flink's ResumeConsumption).
   */
  resumeConsumption(channelIndex: number): void;

  /**
   * The task read the EndOfData of channel `channelIndex` and processed every record before it
   * (Flink's `acknowledgeAllRecordsProcessed`): the channel tells its producer's subpartition,
   * whose partition then resolves `ResultPartitionWriter.getAllDataProcessedFuture()` once every
   * consumer did. Called once per channel, on the event loop. Optional: a gate without it
   * cannot take part in unaligned checkpoints after tasks finish (the runtime refuses it), as
   * its producers could not tell when their records were processed.
   */
  acknowledgeAllRecordsProcessed?(channelIndex: number): void;

  /** Sends a task event upstream to the producers of every channel (TaskEventRequest). */
  sendTaskEvent(event: TaskEvent): void;

  /**
   * Releases every channel (cancelling outstanding requests) and returns all buffers. Idempotent;
   * the promise resolves once buffers are back in the pool.
   */
  close(): Promise<void>;

  /** The failure that broke the gate, if any. */
  getFailureCause?(): Error | undefined;

  // ------------------------------------------------------------ unaligned checkpoints (optional)
  // A gate without these members still takes aligned checkpoints; the runtime refuses to run a
  // task with unaligned checkpoints on it.

  /**
   * Where the gate persists in-flight input of unaligned checkpoints (see
   * {@link ChannelStateWriter}); set by the task before it reads.
   */
  setChannelStateWriter?(writer: ChannelStateWriter): void;

  /**
   * True when a priority event waits: an unaligned barrier that overtook a channel's data, or
   * the announcement of a timeoutable aligned barrier. `pollNext()` hands priority events out
   * before anything else, so the task can act on them between two records.
   */
  hasPriorityEvent?(): boolean;

  /** Resolves once a priority event waits (at once when one does). */
  getPriorityEventAvailableFuture?(): Promise<void>;

  /**
   * Unaligned checkpoint `barrier` started at this task (Flink's `checkpointStarted`): every
   * channel hands the writer the data buffers it received and the task has not read, up to the
   * channel's barrier if that already arrived, and then every data buffer it receives until its
   * barrier arrives.
   */
  checkpointStarted?(barrier: CheckpointBarrier): void;

  /** Checkpoint `checkpointId` completed or was aborted at this task: channels stop persisting. */
  checkpointStopped?(checkpointId: bigint): void;

  /**
   * The alignment of a timeoutable barrier timed out (Flink's `convertToPriorityEvent`): moves
   * the barrier with `sequenceNumber`, which channel `channelIndex` announced, ahead of the data
   * queued before it, so the task reads it next; that data is then in-flight data.
   */
  convertToPriorityEvent?(channelIndex: number, sequenceNumber: number): void;

  /**
   * Buffer debloating (Flink's `triggerDebloating`): called by the task every
   * `taskmanager.network.memory.buffer-debloat.period`. The gate measures the throughput since
   * the last call and tells its producers the buffer size that holds
   * `taskmanager.network.memory.buffer-debloat.target` of data (NewBufferSize).
   */
  triggerDebloating?(): void;

  /** Live counters for metrics. */
  readonly metrics: InputGateMetrics;
}
