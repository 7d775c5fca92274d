import type { ResultPartitionID } from "@sluice/core";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { ResultSubpartitionView } from "./result-subpartition-view.js";

/** Waits for a partition that is not registered yet (Flink's PartitionRequestListener). */
export interface PartitionRequestListener {
  /** The partition registered: the view was created for this listener. */
  notifyPartitionCreated(view: ResultSubpartitionView): void;
  /** The wait failed: timeout (PartitionNotFoundError) or the manager shut down. */
  notifyPartitionCreateFailed(cause: Error): void;
}

/**
 * Where local channels and the data server get subpartition views (Flink's
 * ResultPartitionProvider). In a worker whose tasks share one event loop it is the worker's
 * `ResultPartitionManager`; in a task manager whose slots run on worker threads, a provider that
 * asks the thread running the producer (`TaskSlotPartitionProvider`), so that a partition of
 * another slot is read as if it were in the same thread.
 */
export interface ResultPartitionProvider {
  /**
   * The view of subpartition `subpartitionIndex` of `partitionId` for a local channel, without
   * waiting for the partition to register. Returns the view when it can be made now, or
   * `undefined` when the answer comes later, to `requestListener` (a partition of another
   * thread): the view, or the error (a PartitionNotFoundError while it is not registered).
   *
   * @throws PartitionNotFoundError when the partition is not registered (here, and not known to
   *   be on another thread); another error when it was released.
   */
  requestSubpartitionView(
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    availabilityListener: BufferAvailabilityListener,
    requestListener: PartitionRequestListener,
  ): ResultSubpartitionView | undefined;

  /**
   * Like {@link requestSubpartitionView}, for the data server's readers: when the partition is
   * not registered yet, waits up to `timeoutMs` for it and returns `undefined`;
   * `requestListener` then gets the view or a PartitionNotFoundError.
   */
  createSubpartitionViewOrRegisterListener(
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    availabilityListener: BufferAvailabilityListener,
    requestListener: PartitionRequestListener,
    timeoutMs: number,
  ): ResultSubpartitionView | undefined;

  /** Stops waiting for `requestListener` (the requester went away). */
  cancelWaitingRequest(
    partitionId: ResultPartitionID,
    requestListener: PartitionRequestListener,
  ): void;

  /**
   * True when `partitionId` was registered here and has been released: it will not come back,
   * so a reader need not ask again.
   */
  wasReleased(partitionId: ResultPartitionID): boolean;
}
