import type { ResultSubpartitionView } from "./result-subpartition-view.js";

/**
 * Told by a subpartition view when it has data to read (Flink's BufferAvailabilityListener): a
 * LocalInputChannel in the same process, or the credit-based reader on the data server.
 */
export interface BufferAvailabilityListener {
  /** The view went from "nothing to read" to "something to read" (or was released/failed). */
  notifyDataAvailable(view: ResultSubpartitionView): void;
  /** A priority event was queued at the head (unaligned barrier); optional. */
  notifyPriorityEvent?(prioritySequenceNumber: number): void;
}
