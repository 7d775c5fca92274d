import {
  DataOutputSerializer,
  IllegalStateError,
  type RuntimeEvent,
  serializeRecord,
  serializeRecordHead,
  type TypeSerializer,
} from "@sluice/core";
import type { ResultPartitionWriter } from "@sluice/runtime-api";
import { SimpleCounter } from "../metrics/simple-counter.js";
import type { TimerGauge } from "../metrics/timer-gauge.js";
import type { ChannelSelector } from "../partitioner/channel-selector.js";
import { OutputFlusher } from "./output-flusher.js";

/** How often buffers are flushed (`execution.buffer-timeout.*`). */
export type BufferTimeout =
  /** Flush only full buffers (`execution.buffer-timeout.enabled: false`). */
  | { readonly kind: "disabled" }
  /** Flush after every record (interval 0). */
  | { readonly kind: "always" }
  /** Flush all subpartitions every `intervalMs`. */
  | { readonly kind: "interval"; readonly intervalMs: number };

/** Turns the two buffer-timeout options into a BufferTimeout. */
export function bufferTimeoutOf(enabled: boolean, intervalMs: number): BufferTimeout {
  if (!enabled) return { kind: "disabled" };
  if (intervalMs <= 0) return { kind: "always" };
  return { kind: "interval", intervalMs };
}

/** Common options of record writers. */
export interface RecordWriterOptions {
  /** The task name, for the flusher and messages. */
  readonly taskName: string;
  readonly bufferTimeout: BufferTimeout;
  /**
   * Counts every record emitted (a broadcast record once): the task's `numRecordsOut`. Default: a
   * counter of the writer's own.
   */
  readonly numRecordsOut?: SimpleCounter;
  /**
   * Measures the time the task waits in {@link RecordWriter.getAvailableFuture} for the partition
   * to accept a new record: the task's `softBackPressuredTimeMsPerSecond`.
   */
  readonly backPressuredTime?: TimerGauge;
  /**
   * Measures the same wait while a record already emitted still waits for buffers (the
   * partition's `hasPendingRecord()`): the task's `hardBackPressuredTimeMsPerSecond`, Flink's
   * time its task thread blocks in a buffer request. Without it, that time counts as soft.
   */
  readonly hardBackPressuredTime?: TimerGauge;
}

/**
 * Serializes records and hands them to a ResultPartitionWriter (Flink's RecordWriter). The writer
 * owns the record frame: each record is serialized once into one reusable output, behind its
 * 4-byte length ({@link serializeRecord}), and the partition copies those bytes into its buffers
 * as they are. When the serializer can leave bytes its value already holds out of the output
 * (`serializeHead`, e.g. a byte array's contents) and the partition takes a record in two parts
 * (`emitRecordParts`), a large record's frame and head go from the output and its tail straight
 * from the value: the partition copies the tail once, into its buffers, instead of twice. Emitting is synchronous: a producer loop checks `isAvailable()` and awaits
 * `getAvailableFuture()` only when the partition is back-pressured, so steady state allocates no
 * promise per record.
 */
export abstract class RecordWriter<T> {
  readonly taskName: string;
  /** Records emitted so far (a broadcast record counts once). */
  readonly numRecordsOut: SimpleCounter;
  protected readonly target: ResultPartitionWriter;
  protected readonly serializer: TypeSerializer<T>;
  protected readonly flushAlways: boolean;
  /**
   * The serializer leaves the bytes its values already hold out of the output
   * (`serializeHead`) and the partition takes a record in two parts (`emitRecordParts`): large
   * records then go into the buffers straight from the value.
   */
  private readonly emitsParts: boolean;
  private readonly output = new DataOutputSerializer({ initialCapacity: 256 });
  /**
   * The partition's {@link ResultPartitionWriter.getRecordAlignment}: with it, a record sent to
   * one channel is serialized into the output of the alignment at which the partition will write
   * it (one output per alignment, made when first needed).
   */
  private readonly recordAlignment: ((targetSubpartition: number) => number) | undefined;
  /** Index 0 is `output` itself: an output's buffer starts 8-byte aligned unless told otherwise. */
  private readonly alignedOutputs: (DataOutputSerializer | undefined)[] = [
    this.output,
    ...new Array<undefined>(7).fill(undefined),
  ];
  private readonly flusher: OutputFlusher | undefined;
  private readonly backPressuredTime: TimerGauge | undefined;
  private readonly hardBackPressuredTime: TimerGauge | undefined;
  private closed = false;

  protected constructor(
    target: ResultPartitionWriter,
    serializer: TypeSerializer<T>,
    options: RecordWriterOptions,
  ) {
    this.target = target;
    this.serializer = serializer;
    this.taskName = options.taskName;
    this.numRecordsOut = options.numRecordsOut ?? new SimpleCounter();
    this.backPressuredTime = options.backPressuredTime;
    this.hardBackPressuredTime = options.hardBackPressuredTime ?? options.backPressuredTime;
    this.flushAlways = options.bufferTimeout.kind === "always";
    this.emitsParts =
      typeof serializer.serializeHead === "function" &&
      typeof target.emitRecordParts === "function";
    this.recordAlignment = target.getRecordAlignment?.();
    if (options.bufferTimeout.kind === "interval") {
      this.flusher = new OutputFlusher(
        `OutputFlusher for ${options.taskName}`,
        options.bufferTimeout.intervalMs,
        () => target.flushAll(),
      );
    }
  }

  /** Emits `record` to the channel(s) the writer's strategy selects. */
  abstract emit(record: T): void;

  /** Emits `record` to every channel. */
  broadcastEmit(record: T): void {
    this.checkErroneous();
    this.target.broadcastRecord(this.serialize(record));
    this.numRecordsOut.inc();
    if (this.flushAlways) this.target.flushAll();
  }

  /** Emits `record` to one uniformly random channel (latency markers). */
  randomEmit(record: T): void {
    this.checkErroneous();
    const channel = Math.floor(Math.random() * this.target.numberOfSubpartitions);
    this.emitToChannel(record, channel);
  }

  /** Sends an event to every channel; events are flushed at once. */
  broadcastEvent(event: RuntimeEvent, isPriority = false): void {
    this.checkErroneous();
    this.target.broadcastEvent(event, isPriority);
    this.target.flushAll();
  }

  /** Makes everything written so far available to the consumers. */
  flushAll(): void {
    this.target.flushAll();
  }

  /** False while the partition is back-pressured. */
  isAvailable(): boolean {
    return this.target.isAvailable();
  }

  /**
   * Resolves when the partition accepts records again. The time from a call while the partition
   * is unavailable until it resolves is the task's back-pressured time.
   */
  getAvailableFuture(): Promise<void> {
    const future = this.target.getAvailableFuture();
    if (this.target.isAvailable()) return future;
    const timer =
      this.target.hasPendingRecord?.() === true
        ? this.hardBackPressuredTime
        : this.backPressuredTime;
    if (timer !== undefined) {
      timer.markStart();
      const end = () => timer.markEnd();
      // Registered before the caller's await, so the measurement ends before the task goes on.
      future.then(end, end);
    }
    return future;
  }

  /** Stops the flusher (the partition itself is closed by its owner). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.flusher?.stop();
  }

  protected emitToChannel(record: T, channel: number): void {
    const output = this.recordAlignment === undefined ? this.output : this.alignedOutput(channel);
    if (this.emitsParts) this.emitPartsToChannel(record, channel, output);
    else this.target.emitRecord(serializeRecord(record, this.serializer, output), channel);
    this.numRecordsOut.inc();
    if (this.flushAlways) this.target.flush(channel);
  }

  /**
   * The record's length and head from the reused output, its tail from the value itself: one
   * copy of the tail (into the partition's buffers) instead of two. Out of line, so the path of
   * every other serializer stays small enough to inline.
   */
  private emitPartsToChannel(record: T, channel: number, output: DataOutputSerializer): void {
    const tail = serializeRecordHead(
      record,
      this.serializer as Required<TypeSerializer<T>>,
      output,
    );
    const head = output.getSharedBuffer();
    if (tail.length === 0) this.target.emitRecord(head, channel);
    else (this.target as Required<ResultPartitionWriter>).emitRecordParts(head, tail, channel);
  }

  /** The output at the alignment where the partition will write `channel`'s next record. */
  private alignedOutput(channel: number): DataOutputSerializer {
    const alignment = (this.recordAlignment as (targetSubpartition: number) => number)(channel);
    let output = this.alignedOutputs[alignment];
    if (output === undefined) {
      output = new DataOutputSerializer({ initialCapacity: 256, alignment });
      this.alignedOutputs[alignment] = output;
    }
    return output;
  }

  /** The framed record: its length, then its payload; a view of the reused output. */
  protected serialize(record: T): Uint8Array {
    return serializeRecord(record, this.serializer, this.output);
  }

  /** Whether {@link checkErroneous} would throw: the per-record test, kept small to inline. */
  protected isErroneous(): boolean {
    return this.closed || (this.flusher !== undefined && this.flusher.getError() !== undefined);
  }

  /** Rethrows an error of the OutputFlusher (Flink checks it on emit). */
  protected checkErroneous(): void {
    if (this.closed) throw new IllegalStateError(`record writer of ${this.taskName} is closed`);
    const error = this.flusher?.getError();
    if (error !== undefined) {
      throw new IllegalStateError(
        `the OutputFlusher of ${this.taskName} failed: ${error.message}`,
        {
          cause: error,
        },
      );
    }
  }
}

/** Sends each record to the channel its ChannelSelector picks (Flink's ChannelSelectorRecordWriter). */
export class ChannelSelectorRecordWriter<T> extends RecordWriter<T> {
  private readonly selector: ChannelSelector<T>;

  constructor(
    target: ResultPartitionWriter,
    serializer: TypeSerializer<T>,
    selector: ChannelSelector<T>,
    options: RecordWriterOptions,
  ) {
    super(target, serializer, options);
    this.selector = selector;
    selector.setup(target.numberOfSubpartitions);
  }

  emit(record: T): void {
    if (this.isErroneous()) this.checkErroneous();
    this.emitToChannel(record, this.selector.selectChannel(record));
  }
}

/**
 * Sends every record to every channel, serialized once and written once into shared buffers
 * (Flink's BroadcastRecordWriter).
 */
export class BroadcastRecordWriter<T> extends RecordWriter<T> {
  constructor(
    target: ResultPartitionWriter,
    serializer: TypeSerializer<T>,
    options: RecordWriterOptions,
  ) {
    super(target, serializer, options);
  }

  emit(record: T): void {
    this.broadcastEmit(record);
  }
}

/** Builds the right writer for `selector` (broadcast selectors get a BroadcastRecordWriter). */
export function createRecordWriter<T>(
  target: ResultPartitionWriter,
  serializer: TypeSerializer<T>,
  selector: ChannelSelector<T>,
  options: RecordWriterOptions,
): RecordWriter<T> {
  return selector.isBroadcast()
    ? new BroadcastRecordWriter(target, serializer, options)
    : new ChannelSelectorRecordWriter(target, serializer, selector, options);
}
