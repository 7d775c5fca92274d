import {
  CancelledError,
  ErrorCodes,
  hasPriority,
  IllegalStateError,
  isSluiceError,
  PartitionNotFoundError,
  type ResultPartitionID,
  type TaskEvent,
} from "@sluice/core";
import type { TaskEventPublisher } from "@sluice/runtime-api";
import { isDataAvailable } from "../partition/buffer-and-backlog.js";
import type { BufferAvailabilityListener } from "../partition/buffer-availability-listener.js";
import type {
  PartitionRequestListener,
  ResultPartitionProvider,
} from "../partition/result-partition-provider.js";
import type { ResultSubpartitionView } from "../partition/result-subpartition-view.js";
import {
  type Backoff,
  type BufferAndAvailability,
  InputChannel,
  type InputChannelOwner,
} from "./input-channel.js";

/**
 * An input channel whose producer runs in the same process (Flink's LocalInputChannel): it reads
 * the subpartition view directly — no copy, no credit, no transport. A partition that is not
 * registered yet is retried with exponential backoff (`taskmanager.network.request-backoff.*`).
 * In a task manager whose slots run on worker threads, a producer on another slot thread is read
 * through a view over shared memory: the provider answers such a request later, and the buffers
 * are the producer's segments, read in place.
 *
 * It has no queue of its own: an unaligned barrier overtakes data in the producer's
 * subpartition, which persists that data as output channel state, so this channel persists only
 * what it reads after an unaligned checkpoint started and before its barrier.
 */
export class LocalInputChannel
  extends InputChannel
  implements BufferAvailabilityListener, PartitionRequestListener
{
  private readonly partitionManager: ResultPartitionProvider;
  private readonly taskEventPublisher: TaskEventPublisher | undefined;
  private view: ResultSubpartitionView | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private requested = false;
  private released = false;

  constructor(
    gate: InputChannelOwner,
    channelIndex: number,
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    partitionManager: ResultPartitionProvider,
    backoff: Backoff,
    taskEventPublisher?: TaskEventPublisher,
  ) {
    super(gate, channelIndex, partitionId, subpartitionIndex, backoff);
    this.partitionManager = partitionManager;
    this.taskEventPublisher = taskEventPublisher;
  }

  override isLocal(): boolean {
    return true;
  }

  /** Buffers queued in the producer's subpartition: a local channel reads them in place. */
  override getNumberOfQueuedBuffers(): number {
    return this.view?.getNumberOfQueuedBuffers() ?? 0;
  }

  requestSubpartitions(): void {
    if (this.requested) return;
    this.requested = true;
    this.tryRequest();
  }

  private tryRequest(): void {
    this.retryTimer = undefined;
    if (this.released) return;
    try {
      this.view = this.partitionManager.requestSubpartitionView(
        this.partitionId,
        this.subpartitionIndex,
        this,
        this,
      );
    } catch (error) {
      this.requestFailed(error as Error);
    }
  }

  /** A view the provider made later (a partition of another slot thread). */
  notifyPartitionCreated(view: ResultSubpartitionView): void {
    if (this.released) {
      view.releaseAllResources();
      return;
    }
    this.view = view;
    // Buffers may have been queued before the view existed: the gate asks the channel.
    this.notifyChannelNonEmpty();
  }

  notifyPartitionCreateFailed(cause: Error): void {
    if (this.released) return;
    this.requestFailed(cause);
  }

  private requestFailed(error: Error): void {
    if (isSluiceError(error, ErrorCodes.PARTITION_NOT_FOUND)) {
      // A released partition does not come back by waiting: fail now, for the job side to
      // re-run its producer.
      if (!this.partitionManager.wasReleased(this.partitionId) && this.backOffForRetry()) {
        this.retryTimer = setTimeout(() => this.tryRequest(), this.getCurrentBackoffMs());
      } else {
        this.setError(
          new PartitionNotFoundError(
            `${this.gate.owningTaskName}: ${this} gave up after backoff ${this.getCurrentBackoffMs()} ms: ${error.message}`,
            { cause: error, partitionId: this.partitionId },
          ),
        );
      }
      return;
    }
    this.setError(error);
  }

  notifyDataAvailable(): void {
    this.notifyChannelNonEmpty();
  }

  /** The subpartition queued a priority event at its head: the gate serves us first. */
  notifyPriorityEvent(prioritySequenceNumber: number): void {
    this.gate.notifyPriorityEvent?.(this, prioritySequenceNumber);
  }

  getNextBuffer(): BufferAndAvailability | undefined {
    this.checkError();
    const view = this.view;
    if (view === undefined) {
      if (this.released) throw new CancelledError(`${this} has been released`);
      return undefined;
    }
    const next = view.getNextBuffer();
    if (next === undefined) {
      if (view.isReleased() && !this.released) {
        throw this.producerFailed(view.getFailureCause());
      }
      return undefined;
    }
    const buffer = next.buffer;
    try {
      this.channelStatePersister.checkForBarrier(buffer, next.sequenceNumber);
    } catch (error) {
      buffer.recycleBuffer();
      throw error;
    }
    this.channelStatePersister.maybePersist(buffer);
    return {
      buffer,
      moreAvailable: isDataAvailable(next),
      sequenceNumber: next.sequenceNumber,
      morePriorityEvents: hasPriority(next.nextDataType),
    };
  }

  /** Buffer debloating: the producer's subpartition trims its next buffers to this size. */
  override announceBufferSize(newBufferSize: number): void {
    this.view?.notifyNewBufferSize(newBufferSize);
  }

  /** Flink's count for debloating: the buffers queued in the producer's subpartition. */
  override getBuffersInUseCount(): number {
    return this.view?.getNumberOfQueuedBuffers() ?? 0;
  }

  resumeConsumption(): void {
    if (this.view === undefined) {
      throw new IllegalStateError(`${this}: resumeConsumption before the partition was requested`);
    }
    this.view.resumeConsumption();
  }

  acknowledgeAllRecordsProcessed(): void {
    if (this.view === undefined) {
      throw new IllegalStateError(
        `${this}: acknowledgeAllRecordsProcessed before the partition was requested`,
      );
    }
    this.view.acknowledgeAllDataProcessed();
  }

  sendTaskEvent(event: TaskEvent): void {
    if (
      this.taskEventPublisher === undefined ||
      !this.taskEventPublisher.publish(this.partitionId, event)
    ) {
      throw new IllegalStateError(`${this}: no task event listener for ${this.partitionId}`);
    }
  }

  isReleased(): boolean {
    return this.released;
  }

  releaseAllResources(): void {
    if (this.released) return;
    this.released = true;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.view?.releaseAllResources();
    this.view = undefined;
  }
}
