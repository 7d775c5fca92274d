import type { ResultSubpartitionView } from "./result-subpartition-view.js";

/**
 * Told by a subpartition view when it has data to read (Flink's BufferAvailabilityListener): a
 * LocalInputChannel in the same process, or the credit-based reader on the data server.
 */
export interface BufferAvailabilityListener {
  /** The view went from "nothing to read" to "something to read" (or was released/failed). */
  notifyDataAvailable(view: ResultSubpartitionView): void;
  /**
   * The exclusive buffers of the receiving channel (the initial credit of its partition
   * request); absent for a local reader, which reads without credit. With 0 the subpartition
   * sends even an empty finished buffer, so the receiver can give back the floating buffer it
   * borrowed for it (Flink's rule for `buffers-per-channel: 0`).
   */
  readonly initialCredit?: number;
  /** A priority event was queued at the head (unaligned barrier); optional. */
  notifyPriorityEvent?(prioritySequenceNumber: number): void;
}
