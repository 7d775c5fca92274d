import {
  CancelledError,
  ErrorCodes,
  IllegalStateError,
  isSluiceError,
  PartitionNotFoundError,
  ProducerFailedError,
  type ResultPartitionID,
} from "@sluice/core";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { ManagedResultPartition, PartitionRegistry } from "./managed-result-partition.js";
import type {
  PartitionRequestListener,
  ResultPartitionProvider,
} from "./result-partition-provider.js";
import type { ResultSubpartitionView } from "./result-subpartition-view.js";

/** How many released partition ids a manager remembers (for clear late-request errors). */
const MAX_RELEASED_REMEMBERED = 1024;

/** Limits of a ResultPartitionManager. */
export interface ResultPartitionManagerOptions {
  /**
   * Requests that may wait for not-yet-registered partitions at once, over all partitions and
   * connections (`taskmanager.network.max-waiting-partition-requests`). Beyond it a request is
   * answered with PartitionNotFoundError at once: the consumer retries after its backoff.
   */
  readonly maxWaitingPartitionRequests?: number;
}

export type { PartitionRequestListener } from "./result-partition-provider.js";

interface WaitingRequest {
  readonly subpartitionIndex: number;
  readonly availabilityListener: BufferAvailabilityListener;
  readonly requestListener: PartitionRequestListener;
  readonly timer: NodeJS.Timeout;
}

/**
 * The registry of the result partitions produced in this worker (Flink's ResultPartitionManager).
 * Local input channels and the data server ask it for subpartition views. A request for a
 * partition that is not registered yet can wait (`partition-request-timeout`) instead of failing
 * at once, which removes the race between a fast consumer and a slow producer deployment. The
 * same holds for a blocking partition that is registered but not finished: it cannot be read
 * before its producer finished, so a remote request waits for that, and a local one is answered
 * "not found" and retried with backoff.
 */
export class ResultPartitionManager implements PartitionRegistry, ResultPartitionProvider {
  private readonly partitions = new Map<string, ManagedResultPartition>();
  /**
   * Waiting requests per partition id, keyed by their listener: adding, cancelling and timing out
   * one is O(1), so releasing many at once (a peer closing a connection that holds thousands)
   * costs time linear in their number, never quadratic. Maps keep insertion order, so requests
   * are served in the order they arrived when the partition registers.
   */
  private readonly waiting = new Map<string, Map<PartitionRequestListener, WaitingRequest>>();
  private numberOfWaitingRequests = 0;
  private readonly maxWaitingPartitionRequests: number;
  /**
   * Recently released partitions and why: a request that arrives after the release gets a
   * clear answer at once instead of waiting for the partition-request timeout. Bounded.
   */
  private readonly released = new Map<
    string,
    { readonly cause: Error | undefined; readonly reconsumable: boolean }
  >();
  private shutDown = false;

  constructor(options: ResultPartitionManagerOptions = {}) {
    this.maxWaitingPartitionRequests =
      options.maxWaitingPartitionRequests ?? Number.MAX_SAFE_INTEGER;
  }

  registerResultPartition(partition: ManagedResultPartition): void {
    if (this.shutDown) {
      throw new CancelledError("ResultPartitionManager is shut down");
    }
    const key = partition.partitionId.toString();
    if (this.partitions.has(key)) {
      throw new CancelledError(`result partition ${key} is already registered`);
    }
    this.partitions.set(key, partition);
    if (partition.isConsumable()) this.serveWaitingRequests(partition);
  }

  /** A registered blocking partition finished: serve the requests that waited for it. */
  onPartitionConsumable(partition: ManagedResultPartition): void {
    if (this.partitions.get(partition.partitionId.toString()) !== partition) return;
    this.serveWaitingRequests(partition);
  }

  private serveWaitingRequests(partition: ManagedResultPartition): void {
    for (const request of this.takeWaitingRequests(partition.partitionId.toString())) {
      try {
        const view = partition.createSubpartitionView(
          request.subpartitionIndex,
          request.availabilityListener,
        );
        request.requestListener.notifyPartitionCreated(view);
      } catch (error) {
        request.requestListener.notifyPartitionCreateFailed(error as Error);
      }
    }
  }

  /**
   * Creates the view of subpartition `subpartitionIndex` of `partitionId`, or throws
   * PartitionNotFoundError when the partition is not registered here.
   */
  createSubpartitionView(
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    availabilityListener: BufferAvailabilityListener,
  ): ResultSubpartitionView {
    const partition = this.partitions.get(partitionId.toString());
    if (partition === undefined) {
      this.throwIfReleased(partitionId);
      throw new PartitionNotFoundError(`result partition ${partitionId} not found in this worker`);
    }
    if (!partition.isConsumable()) {
      throw new PartitionNotFoundError(
        `result partition ${partitionId} is ${partition.partitionType.name} and not finished yet: ` +
          "it can be read once its producer finished",
      );
    }
    return partition.createSubpartitionView(subpartitionIndex, availabilityListener);
  }

  /** A local channel's request: every partition of this manager is on this thread. */
  requestSubpartitionView(
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    availabilityListener: BufferAvailabilityListener,
  ): ResultSubpartitionView {
    return this.createSubpartitionView(partitionId, subpartitionIndex, availabilityListener);
  }

  /**
   * Like `createSubpartitionView`, but when the partition is not registered yet, waits up to
   * `timeoutMs` for it and returns `undefined`; `requestListener` then gets the view or a
   * PartitionNotFoundError.
   */
  createSubpartitionViewOrRegisterListener(
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    availabilityListener: BufferAvailabilityListener,
    requestListener: PartitionRequestListener,
    timeoutMs: number,
  ): ResultSubpartitionView | undefined {
    const key = partitionId.toString();
    const partition = this.partitions.get(key);
    if (partition?.isConsumable()) {
      return partition.createSubpartitionView(subpartitionIndex, availabilityListener);
    }
    if (this.shutDown) throw new CancelledError("ResultPartitionManager is shut down");
    this.throwIfReleased(partitionId);
    const what = partition === undefined ? "registered" : "finished (it is blocking)";
    if (this.numberOfWaitingRequests >= this.maxWaitingPartitionRequests) {
      // Not an error of the requester: answer as Flink did before requests could wait, so a
      // real consumer retries after its backoff while a flood cannot grow the worker's state.
      throw new PartitionNotFoundError(
        `result partition ${partitionId} is not registered in this worker, and ` +
          `${this.numberOfWaitingRequests} requests already wait for partitions ` +
          "('taskmanager.network.max-waiting-partition-requests'); not waiting for it",
      );
    }
    let requests = this.waiting.get(key);
    if (requests?.has(requestListener)) {
      throw new IllegalStateError(`a request of ${requestListener} already waits for ${key}`);
    }
    const timer = setTimeout(() => {
      this.removeWaiting(key, requestListener);
      requestListener.notifyPartitionCreateFailed(
        new PartitionNotFoundError(
          `result partition ${partitionId} was not ${what} within ${timeoutMs} ms ` +
            "('taskmanager.network.partition-request-timeout')",
        ),
      );
    }, timeoutMs);
    timer.unref?.();
    if (requests === undefined) {
      requests = new Map();
      this.waiting.set(key, requests);
    }
    requests.set(requestListener, {
      subpartitionIndex,
      availabilityListener,
      requestListener,
      timer,
    });
    this.numberOfWaitingRequests++;
    return undefined;
  }

  /** Stops waiting for `requestListener` (the requester went away). */
  cancelWaitingRequest(
    partitionId: ResultPartitionID,
    requestListener: PartitionRequestListener,
  ): void {
    this.removeWaiting(partitionId.toString(), requestListener);
  }

  private removeWaiting(key: string, requestListener: PartitionRequestListener): void {
    const requests = this.waiting.get(key);
    const request = requests?.get(requestListener);
    if (requests === undefined || request === undefined) return;
    clearTimeout(request.timer);
    requests.delete(requestListener);
    this.numberOfWaitingRequests--;
    if (requests.size === 0) this.waiting.delete(key);
  }

  /** Releases and unregisters `partitionId` (with `cause` when it failed). */
  releasePartition(partitionId: ResultPartitionID, cause?: Error): void {
    const key = partitionId.toString();
    const partition = this.partitions.get(key);
    if (partition === undefined) return;
    // release() calls back onPartitionReleased, which unregisters it and remembers why.
    partition.release(cause);
  }

  /** Every subpartition of `partition` was consumed: a pipelined partition is released. */
  onConsumedPartition(partition: ManagedResultPartition): void {
    partition.release();
  }

  onPartitionReleased(partition: ManagedResultPartition): void {
    const key = partition.partitionId.toString();
    if (this.partitions.get(key) !== partition) return;
    this.partitions.delete(key);
    this.released.set(key, {
      cause: partition.getFailureCause(),
      reconsumable: partition.partitionType.isReconsumable,
    });
    if (this.released.size > MAX_RELEASED_REMEMBERED) {
      this.released.delete(this.released.keys().next().value as string);
    }
    // Requests that waited for a blocking partition to finish learn why it never will.
    for (const request of this.takeWaitingRequests(key)) {
      try {
        this.throwIfReleased(partition.partitionId);
      } catch (error) {
        request.requestListener.notifyPartitionCreateFailed(error as Error);
      }
    }
  }

  /** Removes the requests waiting for partition `key`, their timeouts cancelled. */
  private takeWaitingRequests(key: string): WaitingRequest[] {
    const requests = this.waiting.get(key);
    if (requests === undefined) return [];
    this.waiting.delete(key);
    this.numberOfWaitingRequests -= requests.size;
    const taken = [...requests.values()];
    for (const request of taken) clearTimeout(request.timer);
    return taken;
  }

  /** A request for a partition released earlier fails at once, naming why it was released. */
  private throwIfReleased(partitionId: ResultPartitionID): void {
    const key = partitionId.toString();
    const entry = this.released.get(key);
    if (entry === undefined) return;
    const cause = entry.cause;
    if (cause === undefined) {
      // A blocking partition released on the job side's word is no longer here, as in Flink's
      // PartitionNotFoundException: the job side re-runs its producer to read it again.
      if (entry.reconsumable) {
        throw new PartitionNotFoundError(
          `result partition ${partitionId} was released (releasePartitionsLocally or shutdown)`,
          { partitionId },
        );
      }
      throw new CancelledError(
        `result partition ${partitionId} was already consumed and released (pipelined partitions are read once)`,
      );
    }
    const message = `result partition ${partitionId} was released: ${cause.message}`;
    throw isSluiceError(cause, ErrorCodes.CANCELLED)
      ? new CancelledError(message, { cause })
      : new ProducerFailedError(message, { cause });
  }

  /**
   * True when `partitionId` was registered here and has been released: it will not come back,
   * so a reader need not ask again (only its producer's re-run makes it again).
   */
  wasReleased(partitionId: ResultPartitionID): boolean {
    return this.released.has(partitionId.toString());
  }

  /** Requests waiting for partitions that are not registered yet, over all partitions. */
  getNumberOfWaitingRequests(): number {
    return this.numberOfWaitingRequests;
  }

  /** Ids of the partitions still registered (they hold local resources). */
  getUnreleasedPartitions(): ResultPartitionID[] {
    return [...this.partitions.values()].map((p) => p.partitionId);
  }

  /** Releases everything and fails waiting requests. Idempotent. */
  shutdown(): void {
    if (this.shutDown) return;
    this.shutDown = true;
    for (const [key, requests] of this.waiting) {
      for (const request of requests.values()) {
        clearTimeout(request.timer);
        request.requestListener.notifyPartitionCreateFailed(
          new CancelledError(`ResultPartitionManager shut down while waiting for ${key}`),
        );
      }
    }
    this.waiting.clear();
    this.numberOfWaitingRequests = 0;
    for (const partition of this.partitions.values()) partition.release();
    this.partitions.clear();
  }
}
