import type { AvailabilityProvider, ResultPartitionID, RuntimeEvent } from "@sluice/core";
import type { ChannelStateWriter } from "../checkpoint/channel-state-writer.js";

/**
 * Live counters of one result partition, read by the task's metric reporting. Getters are cheap
 * (no allocation) and may be read at any time, also after release.
 */
export interface ResultPartitionMetrics {
  /** Bytes of finished buffers handed to the subpartitions (records and events). */
  readonly numBytesOut: number;
  /** Buffers handed to the subpartitions. */
  readonly numBuffersOut: number;
  /** Used fraction of the partition's output buffer pool, in [0, 1]. */
  outPoolUsage(): number;
  /**
   * Total milliseconds the writer was unavailable (back-pressured) while the task wanted to emit.
   * The runtime measures a task's `backPressuredTimeMsPerSecond` itself, from the time the task
   * waits for its writers; this is the plugin's own view of one partition.
   */
  readonly backPressuredTimeMs: number;
}

/**
 * The producer side of one result partition, as a `ShuffleEnvironment` hands it to a task
 * (`createResultPartitionWriters`; Flink's `ResultPartitionWriter`). Implemented by the plugin
 * (e.g. `@sluice/network`'s `PipelinedResultPartition`); called by the task's `RecordWriter` on the event
 * loop only. All methods are synchronous: a writer never blocks, it reports back-pressure through
 * availability ({@link AvailabilityProvider}), and the task awaits `getAvailableFuture()` before it
 * emits again while `isAvailable()` is false.
 *
 * Lifecycle: `setup()` once → emit/broadcast/flush any number of times → `finish()` → `close()`.
 * On failure the task calls `fail(cause)` then `close()`. `release()` frees everything (called by
 * the environment or the consumer side once the data is no longer needed).
 */
export interface ResultPartitionWriter extends AvailabilityProvider {
  /** The partition's id: data set partition plus the producing execution attempt. */
  readonly partitionId: ResultPartitionID;
  /** Number of subpartitions, i.e. valid `targetSubpartition` values are `[0, n)`. */
  readonly numberOfSubpartitions: number;

  /**
   * Acquires the output buffer pool and registers the partition so consumers can request it.
   * Called once, before any emit; may throw `SLUICE_ERR_INSUFFICIENT_BUFFERS`.
   */
  setup(): void;

  /**
   * Appends one framed record to a subpartition. `record` is framed by the task's RecordWriter:
   * the 4-byte big-endian payload length, then the payload (`serializeRecord` in `@sluice/core`).
   * The partition treats it as opaque bytes: it copies them as they are (a record may span
   * buffers) and writes no length of its own; the consumer's record deserializer decodes the
   * frame. The bytes are copied before the call returns, so the caller may reuse `record`.
   * May be called while unavailable, as long as the previous record is complete: the partition
   * then uses overdraft buffers and, when even those run out, keeps the rest of this one record
   * and completes it as buffers come back. Emitting again before that throws IllegalStateError
   * (`SLUICE_ERR_ILLEGAL_STATE`): callers check `isAvailable()` between records and await
   * `getAvailableFuture()` when it is false (Flink's task thread would block there).
   *
   * @throws RecordTooLargeError when the payload (the record without its length) exceeds
   *   `taskmanager.network.max-record-size`.
   */
  emitRecord(record: Uint8Array, targetSubpartition: number): void;

  /**
   * Optional: appends one framed record given in two parts, `head` then `tail`, to a
   * subpartition: exactly what {@link ResultPartitionWriter.emitRecord} does with the two
   * concatenated (the length at the start of `head` counts the payload in both). The writer
   * passes a large record this way when its bytes already exist (a byte array's contents), so
   * the partition copies them into its buffers straight from the caller's memory; a partition
   * without this member gets such records whole, through `emitRecord`. Both parts are copied (or no longer read) before the call
   * returns; the same availability contract and errors as `emitRecord` hold.
   */
  emitRecordParts?(head: Uint8Array, tail: Uint8Array, targetSubpartition: number): void;

  /**
   * Optional, read once by the writer after `setup()`: a function that tells where the next
   * record for a subpartition lands in the partition's memory, as its address modulo 8, or
   * undefined when that makes no difference to the partition. It matters for a partition whose
   * buffers are a `SharedArrayBuffer` (slots on threads): V8 copies into shared memory a word at a
   * time only when the source's address agrees with the target's modulo 8, and a byte at a time
   * otherwise, so a writer serializes each record at the alignment the function names.
   */
  getRecordAlignment?(): ((targetSubpartition: number) => number) | undefined;

  /** Appends one framed record (see {@link ResultPartitionWriter.emitRecord}) to every subpartition. */
  broadcastRecord(record: Uint8Array): void;

  /**
   * Sends an event to every subpartition, after the data already emitted (or, when `isPriority`
   * is true and the type allows it, e.g. an unaligned checkpoint barrier, ahead of queued data).
   * Events need no credit downstream.
   */
  broadcastEvent(event: RuntimeEvent, isPriority?: boolean): void;

  /** Makes the partly filled buffer of one subpartition available to its reader now. */
  flush(targetSubpartition: number): void;
  /** Flushes every subpartition (called by the output flusher every buffer timeout). */
  flushAll(): void;

  /**
   * Marks the end of the data: emits `EndOfPartitionEvent` to every subpartition and finishes
   * them. No emit is allowed afterwards. A writer may complete this asynchronously (a blocking
   * partition writes its files): `isAvailable()` is then false until it has, so a task awaits
   * `getAvailableFuture()` and checks `getFailureCause()` before it reports itself finished.
   */
  finish(): void;
  /** True once `finish()` was called. */
  isFinished(): boolean;

  /**
   * Fails the partition: consumers see `cause` (`SLUICE_ERR_PRODUCER_FAILED`) and buffers are
   * released. Called by the task when it fails, before `close()`.
   */
  fail(cause: Error | undefined): void;

  /**
   * Releases all resources of the partition (buffers, views). Idempotent. Consumers still reading
   * see the partition as released (with `cause` when given).
   */
  release(cause?: Error): void;
  /** True once released. */
  isReleased(): boolean;

  /**
   * Returns the output buffer pool to the worker; called by the task at the end of its life,
   * after `finish()` or `fail()`. Pipelined data already queued stays readable until consumed.
   */
  close(): void;

  /**
   * Resolves once the partition is released: a pipelined partition after its consumers read it to
   * the end, any partition after `release()`, `fail()` or the worker's shutdown. The task uses it
   * to report when its output was consumed. Optional: without it, the runtime cannot tell.
   */
  getReleaseFuture?(): Promise<void>;

  /**
   * Resolves once the consumer of every subpartition acknowledged that it processed all records
   * before the EndOfData it read (`InputGate.acknowledgeAllRecordsProcessed`; Flink's
   * `getAllDataProcessedFuture`); rejects when the partition is released first. With final
   * checkpoints (`execution.checkpointing.checkpoints-after-tasks-finish`) a task that sent
   * EndOfData finishes only once it resolved: a checkpoint may then record the task as
   * finished, and a restore does not run it again, so no consumer may still hold its records.
   * Pipelined partitions only (a blocking partition is read after its producer finished).
   * Optional: a pipelined writer without it cannot take part in unaligned checkpoints after
   * tasks finish (the runtime refuses it); aligned ones need it not, as there the final
   * checkpoint's barrier follows the EndOfData.
   */
  getAllDataProcessedFuture?(): Promise<void>;

  /** The failure given to `fail()` or `release()`, if any (Flink's `getFailureCause`). */
  getFailureCause?(): Error | undefined;

  /** Live counters for metrics. */
  readonly metrics: ResultPartitionMetrics;

  // ------------------------------------------------------------ unaligned checkpoints (optional)

  /**
   * True while a record emitted while unavailable still waits for buffers. Events cannot be
   * broadcast then; at any other time they can, back-pressured or not. Without this member the
   * runtime sends events only while `isAvailable()`.
   */
  hasPendingRecord?(): boolean;

  /**
   * Where the partition persists the data unaligned barriers overtake (see
   * {@link ChannelStateWriter}); set by the task before it writes.
   */
  setChannelStateWriter?(writer: ChannelStateWriter): void;

  /**
   * Re-emits recovered output channel state (Flink's `addRecovered`): raw bytes of the record
   * stream of subpartition `targetSubpartition` that were in flight at the restored checkpoint,
   * written before any new record. Like `emitRecord`, the tail may wait for buffers: await
   * availability before the next call.
   */
  addRecoveredState?(targetSubpartition: number, data: Uint8Array): void;
}
