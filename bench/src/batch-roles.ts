/**
 * What each system of the batch-shuffle case implements in a child process. One run: the parent
 * asks the writer to `write` a fixed number of records (a BLOCKING partition, or a file) and waits
 * until they are all on disk; then hands what `write` returned to the reader, which reads every
 * record back; then both `cleanup` (the partition is released, the file deleted).
 */

/** Settings of a batch-shuffle system. */
export interface BatchParams {
  /** Payload bytes of a keyed record. */
  readonly recordSize: number;
  /** Records one run writes and reads. */
  readonly records: number;
  /** Sluice: subpartitions of the producer's partition, keyed (= channels of the consumer gate). */
  readonly channels: number;
  /** Sluice: the environment configuration (both processes). */
  readonly config: Record<string, unknown>;
  /** Records emitted between two yields to the event loop. */
  readonly producerBatch: number;
  /** Records polled between two yields. */
  readonly consumerBatch: number;
}

export interface BatchWriteResult {
  readonly sent: number;
  readonly keySum: number;
  /** ms from the first record until all of them were on disk (readable). */
  readonly writeMs: number;
  /** What the reader needs (a task deployment descriptor, a file path). */
  readonly endpoint: unknown;
  readonly extra?: Record<string, unknown>;
}

export interface BatchReadResult {
  readonly received: number;
  readonly keySum: number;
  /** ms from the reader's start until the last record was read. */
  readonly readMs: number;
  readonly extra?: Record<string, unknown>;
}

export interface BatchWriter {
  /** Starts what the runs share (the TaskExecutor, the folder). */
  prepare(): Promise<void>;
  write(): Promise<BatchWriteResult>;
  /** After a run: release the partition, delete the file. */
  cleanup(): Promise<void>;
  close(): Promise<void>;
}

export interface BatchReader {
  read(endpoint: unknown): Promise<BatchReadResult>;
  cleanup(): Promise<void>;
  close(): Promise<void>;
}
