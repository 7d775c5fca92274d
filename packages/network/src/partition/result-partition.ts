import {
  CancelledError,
  IllegalArgumentError,
  IllegalStateError,
  type LocalBufferPool,
  RECORD_LENGTH_BYTES,
  RecordTooLargeError,
  type ResultPartitionID,
  type RuntimeEvent,
} from "@sluice/core";
import type {
  ResultPartitionMetrics,
  ResultPartitionType,
  ResultPartitionWriter,
} from "@sluice/runtime-api";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { ManagedResultPartition, PartitionRegistry } from "./managed-result-partition.js";
import { ResultPartitionCounters } from "./result-partition-counters.js";
import type { ResultSubpartitionView } from "./result-subpartition-view.js";

/** Construction parameters every result partition takes. */
export interface ResultPartitionOptions {
  readonly owningTaskName: string;
  readonly partitionIndex: number;
  readonly partitionId: ResultPartitionID;
  readonly partitionType: ResultPartitionType;
  readonly numberOfSubpartitions: number;
  readonly partitionManager: PartitionRegistry;
  /** Creates the partition's LocalBufferPool at `setup()`. */
  readonly bufferPoolFactory: () => LocalBufferPool;
  /**
   * Records whose payload is larger than this fail with RecordTooLargeError
   * (`taskmanager.network.max-record-size`).
   */
  readonly maxRecordSize?: number;
}

/**
 * The base of every result partition (Flink's abstract ResultPartition): identity, the output
 * pool created at `setup()`, the produce-state checks, the released/failed state, the counters
 * behind the metrics and the subpartition range. The pipelined and the sort-merge partition
 * differ in how they hold data, which is what their subclasses implement.
 *
 * Records arrive framed by the task's RecordWriter (a 4-byte length, then the payload): a
 * partition copies the bytes as they are and never reads the frame, only its size.
 */
export abstract class ResultPartition implements ResultPartitionWriter, ManagedResultPartition {
  readonly owningTaskName: string;
  readonly partitionIndex: number;
  readonly partitionId: ResultPartitionID;
  readonly partitionType: ResultPartitionType;
  readonly numberOfSubpartitions: number;
  /** The partition's kind, id and task, the prefix of its messages. */
  readonly description: string;
  readonly metrics: ResultPartitionMetrics;
  protected readonly partitionManager: PartitionRegistry;
  /**
   * The largest framed record accepted: the maximum record size plus the length in front. One
   * comparison per record, against the bytes the writer hands over.
   */
  protected readonly maxFramedRecordSize: number;
  protected readonly counters = new ResultPartitionCounters();
  protected bufferPool: LocalBufferPool | undefined;
  protected finished = false;
  protected released = false;
  protected failureCause: Error | undefined;
  private readonly bufferPoolFactory: () => LocalBufferPool;

  protected constructor(kind: string, options: ResultPartitionOptions) {
    if (!Number.isInteger(options.numberOfSubpartitions) || options.numberOfSubpartitions < 1) {
      throw new IllegalArgumentError(
        `numberOfSubpartitions must be >= 1, got ${options.numberOfSubpartitions}`,
      );
    }
    this.owningTaskName = options.owningTaskName;
    this.partitionIndex = options.partitionIndex;
    this.partitionId = options.partitionId;
    this.partitionType = options.partitionType;
    this.numberOfSubpartitions = options.numberOfSubpartitions;
    this.partitionManager = options.partitionManager;
    this.bufferPoolFactory = options.bufferPoolFactory;
    this.maxFramedRecordSize =
      (options.maxRecordSize ?? Number.MAX_SAFE_INTEGER) + RECORD_LENGTH_BYTES;
    this.description = `${kind} ${options.partitionId} [${options.owningTaskName}]`;
    this.metrics = this.counters.metricsView(() => this.bufferPool?.getUsage() ?? 0);
  }

  // ------------------------------------------------------------------------------- lifecycle

  /** Creates the pool, then sets the partition up around it (registering it). Call once. */
  setup(): void {
    if (this.bufferPool !== undefined) {
      throw new IllegalStateError(`${this.description}: setup() was already called`);
    }
    const pool = this.bufferPoolFactory();
    this.bufferPool = pool;
    this.setupInternal(pool);
  }

  /** The kind's own set-up once the pool exists; it registers with the partition manager. */
  protected abstract setupInternal(pool: LocalBufferPool): void;

  /** True once `finish()` was called. */
  isFinished(): boolean {
    return this.finished;
  }

  /** Fails the partition: released with `cause`, which consumers receive as the producer's error. */
  fail(cause: Error | undefined): void {
    this.release(cause ?? new CancelledError(`${this.description} failed`));
  }

  /**
   * Releases the partition: what it holds is freed by {@link releaseInternal}, and the partition
   * manager forgets it. Readers observe the release, and `cause` if given. Idempotent.
   */
  release(cause?: Error): void {
    if (this.released) return;
    this.released = true;
    this.failureCause = cause;
    this.releaseInternal(cause);
    this.partitionManager.onPartitionReleased(this);
  }

  /** Frees the kind's memory or files on release (called once). */
  protected abstract releaseInternal(cause: Error | undefined): void;

  isReleased(): boolean {
    return this.released;
  }

  /** The failure given to `fail()` or `release()`, if any. */
  getFailureCause(): Error | undefined {
    return this.failureCause;
  }

  abstract finish(): void;
  abstract close(): void;
  abstract isConsumable(): boolean;

  // ------------------------------------------------------------------------------ availability

  abstract isAvailable(): boolean;

  getAvailableFuture(): Promise<void> {
    const future = this.currentAvailabilityFuture();
    if (this.counters.backPressureStart < 0 && !this.isAvailable()) {
      // Back-pressured time (Flink's backPressuredTimeMsPerSecond) is measured from the first
      // time a producer finds the partition unavailable until it turns available again.
      this.counters.backPressureStart = Date.now();
      void future.then(() => this.onAvailabilityFutureDone());
    }
    return future;
  }

  /** The future of what the partition waits for now (buffers, a record, a file operation). */
  protected abstract currentAvailabilityFuture(): Promise<void>;

  private onAvailabilityFutureDone(): void {
    if (!this.isAvailable()) {
      // Woken, but still blocked (another channel's limit, or the buffer went elsewhere).
      void this.currentAvailabilityFuture().then(() => this.onAvailabilityFutureDone());
      return;
    }
    this.counters.backPressuredTimeMs += Date.now() - this.counters.backPressureStart;
    this.counters.backPressureStart = -1;
  }

  // ---------------------------------------------------------------------------------- writing

  abstract emitRecord(record: Uint8Array, targetSubpartition: number): void;
  abstract broadcastRecord(record: Uint8Array): void;
  abstract broadcastEvent(event: RuntimeEvent, isPriority?: boolean): void;
  abstract flush(targetSubpartition: number): void;
  abstract flushAll(): void;

  /**
   * Why a record cannot be emitted now because an earlier one still waits (for example "is
   * back-pressured: a record still waits for buffers"), or undefined when none waits.
   */
  protected abstract pendingRecordState(): string | undefined;

  /** Throws when the partition takes no record now, or a framed record of `length` bytes is too large. */
  protected checkEmit(length: number): void {
    this.checkInProduceState();
    const pending = this.pendingRecordState();
    if (pending !== undefined) {
      throw new IllegalStateError(
        `${this.description} ${pending}; await getAvailableFuture() before emitting the next one`,
      );
    }
    if (length > this.maxFramedRecordSize) {
      const maxRecordSize = this.maxFramedRecordSize - RECORD_LENGTH_BYTES;
      throw new RecordTooLargeError(
        `${this.description}: record of ${length - RECORD_LENGTH_BYTES} bytes exceeds the ` +
          `maximum record size of ${maxRecordSize} bytes ('taskmanager.network.max-record-size')`,
      );
    }
  }

  /** Throws when the partition was released or finished. */
  protected checkInProduceState(): void {
    if (this.released) {
      throw new CancelledError(`${this.description} has been released`, {
        cause: this.failureCause,
      });
    }
    if (this.finished) {
      throw new IllegalStateError(`${this.description} is finished; no more data is accepted`);
    }
  }

  /** The pool, or IllegalStateError when the partition is written to before `setup()`. */
  protected setUpPool(): LocalBufferPool {
    const pool = this.bufferPool;
    if (pool === undefined) {
      throw new IllegalStateError(`${this.description}: setup() must be called before writing`);
    }
    return pool;
  }

  /** Throws IllegalArgumentError unless `index` names a subpartition (`what` names the use). */
  protected checkSubpartitionIndex(index: number, what = "subpartition"): void {
    if (!(index >= 0 && index < this.numberOfSubpartitions)) {
      throw new IllegalArgumentError(
        `${this.description}: ${what} ${index} out of [0, ${this.numberOfSubpartitions})`,
      );
    }
  }

  // -------------------------------------------------------------------------- reader side

  /**
   * A read view of subpartition `index` (called by the ResultPartitionManager); throws when the
   * index is out of range or the partition was released.
   */
  createSubpartitionView(
    index: number,
    listener: BufferAvailabilityListener,
  ): ResultSubpartitionView {
    this.checkSubpartitionIndex(index);
    if (this.released) {
      throw new CancelledError(`${this.description} has been released`, {
        cause: this.failureCause,
      });
    }
    return this.createSubpartitionViewInternal(index, listener);
  }

  /** The kind's view of a valid subpartition of a partition not released. */
  protected abstract createSubpartitionViewInternal(
    index: number,
    listener: BufferAvailabilityListener,
  ): ResultSubpartitionView;

  /** The pool, for tests and metrics. */
  getBufferPool(): LocalBufferPool | undefined {
    return this.bufferPool;
  }

  /**
   * Buffers queued in all subpartitions (Flink's outputQueueLength), or in subpartition
   * `subpartition` when given (the detailed queue metrics).
   */
  abstract getNumberOfQueuedBuffers(subpartition?: number): number;

  /** Data bytes queued in all subpartitions and not read yet: the in-flight output. */
  abstract getNumberOfQueuedBytes(): number;

  toString(): string {
    return this.description;
  }
}
