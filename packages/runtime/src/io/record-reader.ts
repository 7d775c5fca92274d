import {
  anyOf,
  CancelledError,
  type DataInputDeserializer,
  type DeserializationResult,
  IllegalStateError,
  type RecordHolder,
  type RecordViewReader,
  type RuntimeEvent,
  SpillingAdaptiveSpanningRecordDeserializer,
  type SpillingAdaptiveSpanningRecordDeserializerOptions,
  StopMode,
  type TypeSerializer,
} from "@sluice/core";
import type {
  BufferOrEvent,
  ChannelStateWriter,
  InputChannelInfo,
  InputGate,
} from "@sluice/runtime-api";
import { SimpleCounter } from "../metrics/simple-counter.js";
import type { TimerGauge } from "../metrics/timer-gauge.js";

/** What a poll of the reader produced. */
export const PollStatus = {
  /** Records were delivered and more may be available right away. */
  MORE_AVAILABLE: "MORE_AVAILABLE",
  /** Nothing is available now: await `getAvailableFuture()`. */
  NOTHING_AVAILABLE: "NOTHING_AVAILABLE",
  /**
   * The input is exhausted: every channel delivered EndOfData (its producer emitted its last
   * record) or EndOfPartition. A checkpointing task's reader may still pass checkpoint barriers
   * after it (its producers wait for their final checkpoint), which the task takes once its code
   * returned.
   */
  END_OF_INPUT: "END_OF_INPUT",
} as const;
export type PollStatus = (typeof PollStatus)[keyof typeof PollStatus];

/**
 * What a RecordReader reads from: an `InputGate`, or a `CheckpointedInputGate` that routes
 * checkpoint events to the task's barrier handler before records are deserialized.
 */
export type RecordReaderInput = Pick<
  InputGate,
  "numberOfInputChannels" | "pollNext" | "isFinished" | "getAvailableFuture"
> & {
  /**
   * The next priority event, or `undefined` (optional): taken between two records of a buffer
   * the reader is still reading, so an unaligned barrier need not wait for that buffer.
   */
  pollPriorityEvent?(): BufferOrEvent | undefined;
};

/** Options of a RecordReader. */
export interface RecordReaderOptions extends SpillingAdaptiveSpanningRecordDeserializerOptions {
  /**
   * Called for every event other than EndOfPartition (barriers, EndOfData, task events). An
   * aligned checkpoint barrier blocks its channel upstream (Flink's alignment) until the
   * consumer calls `gate.resumeConsumption(channel)`; read through a `CheckpointedInputGate` to
   * have barriers handled by a barrier handler.
   */
  readonly onEvent?: (event: RuntimeEvent, channelIndex: number) => void;
  /** Called when a channel delivered EndOfPartition. */
  readonly onEndOfPartition?: (channelIndex: number) => void;
  /** Counts every record delivered: the task's `numRecordsIn`. Default: a counter of the reader's own. */
  readonly numRecordsIn?: SimpleCounter;
  /**
   * Measures the time the task waits in {@link RecordReader.getAvailableFuture} after a poll found
   * nothing: the task's `idleTimeMsPerSecond`.
   */
  readonly idleTime?: TimerGauge;
}

/** Records the async iterator decodes at most before it yields them. */
const ITERATOR_BATCH = 1024;

/**
 * Reads typed records from an input gate (Flink's StreamTaskNetworkInput): one spanning-record
 * deserializer per channel, since records of different channels interleave buffer by buffer.
 * `pollRecords` is the synchronous batch fast path; the async iterator wraps it for user code.
 *
 * Exactly once with checkpoints: a checkpoint barrier is handled inside the call that takes it
 * from the gate (the task's barrier handler snapshots the task's state there, synchronously),
 * always between two records. Every way of reading keeps the snapshot equal to the records the
 * task's code has processed before the barrier: a `poll*` callback is called for each record
 * before the reader moves on (so it must finish with a record before it returns), and the async
 * iterator takes nothing from the gate while it holds records it has not yielded yet.
 */
export class RecordReader<T> implements AsyncIterable<T> {
  /** Records delivered so far. */
  readonly numRecordsIn: SimpleCounter;
  private readonly gate: RecordReaderInput;
  private readonly serializer: TypeSerializer<T>;
  private readonly deserializers: (SpillingAdaptiveSpanningRecordDeserializer | undefined)[];
  private readonly options: RecordReaderOptions;
  private readonly holder: RecordHolder<T> = { value: undefined };
  private current: SpillingAdaptiveSpanningRecordDeserializer | undefined;
  private finished = false;
  /** Per channel: it delivered EndOfData or EndOfPartition (no record follows). */
  private readonly channelsEnded: boolean[];
  /** Channels that have not ended yet. */
  private channelsOpen: number;
  /** Every channel ended (EndOfData or EndOfPartition): no record comes any more. */
  private dataEnded = false;
  /** A channel delivered `EndOfData(NO_DRAIN)`: a stop-with-savepoint without drain. */
  private stoppedWithoutDrain = false;
  private closed = false;
  /** The other readers of the task (see {@link setSiblings}). */
  private siblings: readonly RecordReader<unknown>[] = [];
  /** The last poll found nothing: a wait for the gate now is idle time. */
  private starved = false;
  private readonly endIdle: () => void;

  constructor(
    gate: RecordReaderInput,
    serializer: TypeSerializer<T>,
    options: RecordReaderOptions = {},
  ) {
    this.gate = gate;
    this.serializer = serializer;
    this.options = options;
    this.deserializers = new Array(gate.numberOfInputChannels);
    this.channelsEnded = new Array<boolean>(gate.numberOfInputChannels).fill(false);
    this.channelsOpen = gate.numberOfInputChannels;
    this.numRecordsIn = options.numRecordsIn ?? new SimpleCounter();
    const idleTime = options.idleTime;
    this.endIdle = () => idleTime?.markEnd();
  }

  /**
   * Delivers up to `maxRecords` records to `onRecord`, synchronously. Returns whether more may
   * be available, nothing is available now, or the input ended. The records are added to
   * `numRecordsIn` once per call, not one by one.
   *
   * A checkpoint whose barrier the call meets is snapshotted inside it, between the records
   * before the barrier and those after it. So `onRecord` must finish processing each record
   * (update the state the task's CheckpointHandler snapshots) before it returns: a callback that
   * only collects records, to process them after the poll, has them missing from the snapshot
   * although the producer's snapshot counts them as delivered, and a restore loses them.
   */
  pollRecords(onRecord: (record: T) => void, maxRecords = Number.MAX_SAFE_INTEGER): PollStatus {
    return this.poll(onRecord, undefined, undefined, maxRecords, false);
  }

  /**
   * Like {@link pollRecords}, but decodes every record into `reuse` with the serializer's
   * `deserializeInto` (serializers without it allocate as in `pollRecords`) and passes it to
   * `onRecord`: one object serves the whole poll, so decoding allocates nothing per record.
   * `onRecord` must copy what it keeps, since the next record overwrites `reuse`. As with
   * `pollRecords`, a checkpoint may be snapshotted inside the call: `onRecord` must finish
   * processing each record before it returns.
   */
  pollRecordsInto(
    reuse: T,
    onRecord: (record: T) => void,
    maxRecords = Number.MAX_SAFE_INTEGER,
  ): PollStatus {
    return this.poll(onRecord, reuse, undefined, maxRecords, false);
  }

  /**
   * Like {@link pollRecords}, but without the serializer: `onRecord` reads each record's payload
   * in place from a DataInputDeserializer that is valid only during the call (no copy, no value
   * allocated). For consumers that need a few fields of each record, or decode on their own. As
   * with `pollRecords`, a checkpoint may be snapshotted inside the call: `onRecord` must finish
   * processing each record before it returns.
   */
  pollRecordViews(
    onRecord: (input: DataInputDeserializer) => void,
    maxRecords = Number.MAX_SAFE_INTEGER,
  ): PollStatus {
    return this.poll(undefined, undefined, onRecord, maxRecords, false);
  }

  /**
   * The poll loop of every way of reading: exactly one of `onRecord` and `onView` is set. With
   * `withinBuffer`, the call ends (MORE_AVAILABLE) instead of asking the gate for more once it
   * delivered a record: for a caller that hands the records on only after the call, which a
   * barrier taken from the gate in the same call would snapshot before they were processed.
   */
  private poll(
    onRecord: ((record: T) => void) | undefined,
    reuse: T | undefined,
    onView: RecordViewReader | undefined,
    maxRecords: number,
    withinBuffer: boolean,
  ): PollStatus {
    if (this.closed) throw new CancelledError("record reader is closed");
    this.starved = false;
    if (this.siblings.length > 0) this.pollEndedSiblings();
    // Priority events go ahead of the rest of the current buffer (once per call, not per record).
    if (this.current !== undefined && this.gate.pollPriorityEvent !== undefined) {
      this.takePriorityEvents(this.gate.pollPriorityEvent.bind(this.gate));
    }
    let delivered = 0;
    const holder = this.holder;
    const serializer = this.serializer;
    while (delivered < maxRecords) {
      const current = this.current;
      if (current !== undefined) {
        let result: DeserializationResult;
        if (onView !== undefined) result = current.readNextRecord(onView);
        else if (reuse !== undefined) result = current.getNextRecordInto(serializer, reuse, holder);
        else result = current.getNextRecord(serializer, holder);
        if (result.isBufferConsumed()) this.current = undefined;
        if (result.isFullRecord()) {
          if (onRecord !== undefined) {
            const value = holder.value as T;
            holder.value = undefined;
            onRecord(value);
          }
          delivered++;
        }
        continue;
      }
      if (this.finished || this.dataEnded) {
        this.numRecordsIn.inc(delivered);
        return PollStatus.END_OF_INPUT;
      }
      if (withinBuffer && delivered > 0) break;
      const next = this.gate.pollNext();
      if (next === undefined) {
        this.numRecordsIn.inc(delivered);
        if (this.gate.isFinished()) {
          this.finished = true;
          return PollStatus.END_OF_INPUT;
        }
        this.starved = true;
        return PollStatus.NOTHING_AVAILABLE;
      }
      if (next.buffer !== undefined) {
        if (this.channelsEnded[next.channelIndex] === true) {
          next.buffer.recycleBuffer();
          throw new IllegalStateError(
            `channel ${next.channelIndex} delivered data after EndOfData: its producer emitted records after its last one`,
          );
        }
        const deserializer = this.deserializerOf(next.channelIndex);
        deserializer.setNextBuffer(next.buffer);
        this.current = deserializer;
      } else if (next.event !== undefined) {
        this.onEvent(next.event, next.channelIndex);
      }
    }
    this.numRecordsIn.inc(delivered);
    return PollStatus.MORE_AVAILABLE;
  }

  private takePriorityEvents(poll: () => BufferOrEvent | undefined): void {
    for (let next = poll(); next !== undefined; next = poll()) {
      if (next.event !== undefined) this.onEvent(next.event, next.channelIndex);
    }
  }

  private deserializerOf(channel: number): SpillingAdaptiveSpanningRecordDeserializer {
    let deserializer = this.deserializers[channel];
    if (deserializer === undefined) {
      deserializer = new SpillingAdaptiveSpanningRecordDeserializer(this.options);
      this.deserializers[channel] = deserializer;
    }
    return deserializer;
  }

  private onEvent(event: RuntimeEvent, channel: number): void {
    if (event.kind === "EndOfPartition") {
      const deserializer = this.deserializers[channel];
      if (deserializer?.hasUnfinishedData()) {
        deserializer.clear();
        throw new CancelledError(
          `channel ${channel} ended (EndOfPartition) in the middle of a record: the producer's data is incomplete`,
        );
      }
      deserializer?.clear();
      this.deserializers[channel] = undefined;
      this.markEnded(channel);
      if (this.gate.isFinished()) this.finished = true;
      this.options.onEndOfPartition?.(channel);
      return;
    }
    if (event.kind === "EndOfData") {
      if (event.stopMode === StopMode.NO_DRAIN) this.stoppedWithoutDrain = true;
      this.markEnded(channel);
    }
    this.options.onEvent?.(event, channel);
  }

  /** Channel `channel` will deliver no record any more. */
  private markEnded(channel: number): void {
    if (this.channelsEnded[channel] === true) return;
    this.channelsEnded[channel] = true;
    this.channelsOpen--;
    if (this.channelsOpen === 0) this.dataEnded = true;
  }

  /**
   * The other readers of the same task, which share its barrier handler. A reader whose data
   * ended (END_OF_INPUT on EndOfData) is typically no longer polled by the task's code, but its
   * channels still deliver the barriers of the checkpoints its producers wait for, and an aligned
   * checkpoint of the task needs them: so every poll of a sibling first takes the events of such
   * readers, and {@link getAvailableFuture} wakes for them too (Flink's input processor keeps
   * reading an input after its END_OF_DATA, up to its END_OF_INPUT).
   */
  setSiblings(readers: readonly RecordReader<unknown>[]): void {
    this.siblings = readers.filter((reader) => reader !== (this as RecordReader<unknown>));
  }

  /** Readers among the siblings whose data ended but whose channels are still open. */
  private endedSiblings(): RecordReader<unknown>[] {
    return this.siblings.filter((reader) => reader.dataEnded && !reader.finished && !reader.closed);
  }

  private pollEndedSiblings(): void {
    for (const reader of this.siblings) {
      if (reader.dataEnded && !reader.finished && !reader.closed) reader.pollToEndOfPartition();
    }
  }

  /**
   * Reads what comes after the task's code stopped reading (Flink's task processing its input
   * after END_OF_DATA until END_OF_INPUT): the events up to EndOfPartition on every channel, so
   * the barriers of the checkpoints its producers wait for reach the task's barrier handler.
   * Records still in the reader, or arriving on a channel that did not deliver EndOfData (the
   * code returned before its input ended), are dropped: nothing processes them any more.
   * Returns true once every channel delivered EndOfPartition; false when nothing is available
   * now (await {@link getAvailableFuture}).
   */
  pollToEndOfPartition(): boolean {
    if (this.closed) throw new CancelledError("record reader is closed");
    this.dataEnded = true;
    if (this.current !== undefined) {
      this.current.clear();
      this.current = undefined;
    }
    for (;;) {
      if (this.finished) return true;
      const next = this.gate.pollNext();
      if (next === undefined) {
        if (this.gate.isFinished()) this.finished = true;
        return this.finished;
      }
      if (next.buffer !== undefined) {
        next.buffer.recycleBuffer();
        continue;
      }
      if (next.event === undefined) continue;
      if (next.event.kind === "EndOfPartition") this.deserializers[next.channelIndex]?.clear();
      this.onEvent(next.event, next.channelIndex);
    }
  }

  /**
   * An unaligned checkpoint starts (Flink's `StreamTaskNetworkInput.prepareSnapshot`): hands
   * `writer` a copy of the bytes each channel's deserializer holds and has not turned into
   * records yet (a partial record), the first in-flight input of that channel. `channelInfo`
   * names the channel behind a reader channel index.
   */
  prepareSnapshot(
    writer: ChannelStateWriter,
    checkpointId: bigint,
    channelInfo: (channelIndex: number) => InputChannelInfo,
  ): void {
    for (let channel = 0; channel < this.deserializers.length; channel++) {
      const buffer = this.deserializers[channel]?.getUnconsumedBuffer();
      if (buffer !== undefined) writer.addInputData(checkpointId, channelInfo(channel), [buffer]);
    }
  }

  /** True once every channel ended (EndOfPartition). */
  isFinished(): boolean {
    return this.finished;
  }

  /**
   * True once every channel delivered EndOfData or EndOfPartition: no record comes any more
   * (FLIP-147's end of data; the channels may still pass checkpoint barriers).
   */
  isEndOfData(): boolean {
    return this.dataEnded || this.finished;
  }

  /**
   * How the input's data ends (Flink's `EndOfDataStatus`): `NO_DRAIN` as soon as a channel
   * delivered `EndOfData(NO_DRAIN)` (a stop-with-savepoint without drain: the task must not emit
   * its end-of-input results), `DRAIN` once every channel ended otherwise, `undefined` before.
   */
  endOfDataStopMode(): StopMode | undefined {
    if (this.stoppedWithoutDrain) return StopMode.NO_DRAIN;
    return this.isEndOfData() ? StopMode.DRAIN : undefined;
  }

  /**
   * Resolves when the gate has something again. After a poll that found nothing, the time until
   * it resolves is the task's idle time.
   */
  getAvailableFuture(): Promise<void> {
    const ended = this.siblings.length > 0 ? this.endedSiblings() : [];
    const own = this.gate.getAvailableFuture();
    const future =
      ended.length === 0
        ? own
        : anyOf([own, ...ended.map((reader) => reader.gate.getAvailableFuture())]);
    const idleTime = this.options.idleTime;
    if (idleTime !== undefined && this.starved) {
      this.starved = false;
      idleTime.markStart();
      // Registered before the caller's await, so the measurement ends before the task goes on.
      future.then(this.endIdle, this.endIdle);
    }
    return future;
  }

  /**
   * Iterates all records until the input ends; awaits only when nothing is available.
   *
   * It decodes records in batches, never beyond the buffer it is reading, and takes the next
   * buffer or event from the gate only once the loop has been given every record of the batch.
   * So a checkpoint barrier is handled in the `next()` that follows the loop's processing of the
   * last record before it, and the snapshot holds exactly what the loop processed. The loop's
   * body must therefore be done with a record (its state updated) when it asks for the next one.
   */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    const batch: T[] = [];
    const collect = (record: T) => {
      batch.push(record);
    };
    for (;;) {
      const status = this.poll(collect, undefined, undefined, ITERATOR_BATCH, true);
      for (const record of batch) yield record;
      batch.length = 0;
      if (status === PollStatus.END_OF_INPUT) return;
      if (status === PollStatus.NOTHING_AVAILABLE) await this.getAvailableFuture();
    }
  }

  /** Releases every deserializer (and its buffers and spill files). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const deserializer of this.deserializers) deserializer?.clear();
    this.deserializers.fill(undefined);
    this.current = undefined;
  }
}
