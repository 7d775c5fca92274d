import type { BufferAndBacklog } from "./buffer-and-backlog.js";

/** Whether a view can hand out a buffer now, and its backlog (Flink's AvailabilityWithBacklog). */
export interface AvailabilityWithBacklog {
  readonly isAvailable: boolean;
  readonly backlog: number;
}

/**
 * A reader's handle on one subpartition (Flink's ResultSubpartitionView). Exactly one view exists
 * per pipelined subpartition; it is created by the ResultPartitionManager for a local channel or
 * for a remote partition request.
 */
export interface ResultSubpartitionView {
  /** Takes the next buffer, or `undefined` when none is available now. */
  getNextBuffer(): BufferAndBacklog | undefined;
  /**
   * With `numCreditsAvailable > 0`: whether any buffer can be taken; with 0 credits: whether the
   * next buffer is an event (events need no credit). Plus the current backlog.
   */
  getAvailabilityAndBacklog(numCreditsAvailable: number): AvailabilityWithBacklog;
  /** Called by the subpartition when data becomes available. */
  notifyDataAvailable(): void;
  /** Unblocks the subpartition after an aligned barrier was consumed. */
  resumeConsumption(): void;
  /** The consumer processed every record (answers EndOfData). */
  acknowledgeAllDataProcessed(): void;
  /** Releases the view; for pipelined partitions this counts as the subpartition consumed. */
  releaseAllResources(): void;
  isReleased(): boolean;
  /** Why the partition was released, if it failed; surfaced to the consumer. */
  getFailureCause(): Error | undefined;
  /** Buffers currently queued in the subpartition (a metric; unsynchronized in Flink). */
  getNumberOfQueuedBuffers(): number;
  /** Caps the size of the next buffers (buffer debloating). */
  notifyNewBufferSize(newBufferSize: number): void;
}
