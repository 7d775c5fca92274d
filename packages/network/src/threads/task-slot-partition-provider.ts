import {
  CancelledError,
  ErrorCodes,
  isSluiceError,
  ResultPartitionID,
  type SharedNetworkMemory,
  type ThreadDoorbell,
} from "@sluice/core";
import type { SubpartitionRequest, TaskSlotThreadsContext } from "@sluice/runtime-api";
import type { BufferAvailabilityListener } from "../partition/buffer-availability-listener.js";
import { PipelinedSubpartitionView } from "../partition/pipelined-subpartition-view.js";
import type { ResultPartitionManager } from "../partition/result-partition-manager.js";
import type {
  PartitionRequestListener,
  ResultPartitionProvider,
} from "../partition/result-partition-provider.js";
import type { ResultSubpartitionView } from "../partition/result-subpartition-view.js";
import { CrossThreadSubpartitionView } from "./cross-thread-subpartition-view.js";
import { CrossThreadViewReader } from "./cross-thread-view-reader.js";
import {
  SharedSubpartitionQueue,
  type SharedSubpartitionQueueHandle,
} from "./shared-subpartition-queue.js";

/**
 * The data ring of a pipelined subpartition's queue: records of buffers by reference (48 bytes
 * each, so 85 of them) and events copied. The producer's pool bounds what it can push, not this.
 */
const PIPELINED_QUEUE_BYTES = 4096;
/** Return entries of a queue: recycles and the consumer's few control messages. */
const RETURN_ENTRIES = 256;

/** What the requesting thread sends with its request. */
interface ConsumerInfo {
  /** The requesting thread. */
  readonly thread: number;
  /** The data server's remote channel's exclusive buffers; absent for a local channel. */
  readonly initialCredit?: number;
}

/** What the producing thread answers. */
interface SubpartitionAnswer {
  readonly queue: SharedSubpartitionQueueHandle;
}

/** A request sent to another thread, until it is answered. */
interface PendingRequest {
  readonly partitionId: ResultPartitionID;
  readonly requestListener: PartitionRequestListener;
  cancelled: boolean;
}

/**
 * The {@link ResultPartitionProvider} of one thread of a task manager whose slots run on worker
 * threads. A partition of this thread is read directly, as in a single-threaded worker; one that
 * another slot's thread produces is asked for through the runtime's routing
 * (`TaskSlotThreadsContext.requestSubpartition`), and read through a
 * {@link CrossThreadSubpartitionView} over a {@link SharedSubpartitionQueue}. It answers the
 * other threads' requests for this thread's partitions with a {@link CrossThreadViewReader}.
 *
 * On the main thread (role `network`) it has no partitions: the data server's requests all go
 * to the slots' threads, waiting as the server's own requests wait for a partition to register.
 */
export class TaskSlotPartitionProvider implements ResultPartitionProvider {
  private readonly local: ResultPartitionManager;
  private readonly threads: TaskSlotThreadsContext;
  private readonly memory: SharedNetworkMemory;
  private readonly doorbell: ThreadDoorbell;
  private readonly segmentSize: number;
  private readonly pending = new Set<PendingRequest>();
  private readonly readers = new Set<CrossThreadViewReader>();
  private readonly views = new Set<CrossThreadSubpartitionView>();
  private closed = false;

  constructor(
    local: ResultPartitionManager,
    threads: TaskSlotThreadsContext,
    memory: SharedNetworkMemory,
    doorbell: ThreadDoorbell,
  ) {
    this.local = local;
    this.threads = threads;
    this.memory = memory;
    this.doorbell = doorbell;
    this.segmentSize = memory.segmentSize;
    threads.serveSubpartitionRequests((request) => this.serve(request));
    threads.onThreadLost((threadIndex, cause) => this.onThreadLost(threadIndex, cause));
  }

  requestSubpartitionView(
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    availabilityListener: BufferAvailabilityListener,
    requestListener: PartitionRequestListener,
  ): ResultSubpartitionView | undefined {
    try {
      return this.local.createSubpartitionView(
        partitionId,
        subpartitionIndex,
        availabilityListener,
      );
    } catch (error) {
      // Not here: another slot's thread may produce it (or this one, not registered yet).
      if (!isSluiceError(error, ErrorCodes.PARTITION_NOT_FOUND)) throw error;
      if (this.local.wasReleased(partitionId)) throw error;
    }
    this.requestFromAnotherThread(
      partitionId,
      subpartitionIndex,
      0,
      availabilityListener,
      requestListener,
    );
    return undefined;
  }

  createSubpartitionViewOrRegisterListener(
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    availabilityListener: BufferAvailabilityListener,
    requestListener: PartitionRequestListener,
    timeoutMs: number,
  ): ResultSubpartitionView | undefined {
    if (this.threads.role === "slot") {
      return this.local.createSubpartitionViewOrRegisterListener(
        partitionId,
        subpartitionIndex,
        availabilityListener,
        requestListener,
        timeoutMs,
      );
    }
    this.requestFromAnotherThread(
      partitionId,
      subpartitionIndex,
      timeoutMs,
      availabilityListener,
      requestListener,
    );
    return undefined;
  }

  cancelWaitingRequest(
    partitionId: ResultPartitionID,
    requestListener: PartitionRequestListener,
  ): void {
    for (const request of this.pending) {
      if (request.requestListener === requestListener) request.cancelled = true;
    }
    this.local.cancelWaitingRequest(partitionId, requestListener);
  }

  wasReleased(partitionId: ResultPartitionID): boolean {
    return this.local.wasReleased(partitionId);
  }

  /** Cross-thread views and readers open now (for tests and metrics). */
  getNumberOfCrossThreadChannels(): { readonly views: number; readonly readers: number } {
    return { views: this.views.size, readers: this.readers.size };
  }

  private requestFromAnotherThread(
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    timeoutMs: number,
    availabilityListener: BufferAvailabilityListener,
    requestListener: PartitionRequestListener,
  ): void {
    const pending: PendingRequest = { partitionId, requestListener, cancelled: false };
    this.pending.add(pending);
    const thread = this.doorbell.threadIndex;
    const consumer: ConsumerInfo =
      availabilityListener.initialCredit === undefined
        ? { thread }
        : { thread, initialCredit: availabilityListener.initialCredit };
    this.threads
      .requestSubpartition({
        partitionId: partitionId.toString(),
        subpartitionIndex,
        timeoutMs,
        consumer,
      })
      .then(
        (answer) => {
          this.pending.delete(pending);
          const queue = SharedSubpartitionQueue.attach((answer as SubpartitionAnswer).queue);
          const view = new CrossThreadSubpartitionView(
            queue,
            this.memory,
            this.doorbell,
            availabilityListener,
            (disposed) => this.views.delete(disposed),
          );
          this.views.add(view);
          if (pending.cancelled || this.closed) view.releaseAllResources();
          else requestListener.notifyPartitionCreated(view);
        },
        (error: unknown) => {
          this.pending.delete(pending);
          if (pending.cancelled) return;
          requestListener.notifyPartitionCreateFailed(
            this.closed
              ? new CancelledError(`the request for ${partitionId} was canceled`)
              : (error as Error),
          );
        },
      );
  }

  /**
   * Another thread asks for a view of one of this thread's partitions: the view is read into a
   * new queue by a reader of this thread, and the queue goes back.
   */
  private serve(request: SubpartitionRequest): Promise<SubpartitionAnswer> {
    const partitionId = ResultPartitionID.parse(request.partitionId);
    const consumer = request.consumer as ConsumerInfo;
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(
          new CancelledError(`the environment of thread ${this.doorbell.threadIndex} is closed`),
        );
        return;
      }
      const reader = new CrossThreadViewReader(
        this.memory,
        this.doorbell,
        consumer.thread,
        (disposed) => this.readers.delete(disposed),
        consumer.initialCredit,
      );
      this.readers.add(reader);
      const created = (view: ResultSubpartitionView) => {
        const queue = SharedSubpartitionQueue.create(this.queueBytesFor(view), RETURN_ENTRIES);
        reader.start(view, queue);
        resolve({ queue: queue.handle });
      };
      const listener: PartitionRequestListener = {
        notifyPartitionCreated: created,
        notifyPartitionCreateFailed: (cause) => {
          reader.dispose();
          reject(cause);
        },
      };
      try {
        const view =
          request.timeoutMs > 0
            ? this.local.createSubpartitionViewOrRegisterListener(
                partitionId,
                request.subpartitionIndex,
                reader,
                listener,
                request.timeoutMs,
              )
            : this.local.createSubpartitionView(partitionId, request.subpartitionIndex, reader);
        if (view !== undefined) created(view);
      } catch (error) {
        listener.notifyPartitionCreateFailed(error as Error);
      }
    });
  }

  /**
   * A pipelined subpartition's buffers are all of the shared memory and go by reference; a
   * blocking one's are read from its file into buffers of this thread, copied whole into the
   * queue, which must hold a segment.
   */
  private queueBytesFor(view: ResultSubpartitionView): number {
    return view instanceof PipelinedSubpartitionView
      ? PIPELINED_QUEUE_BYTES
      : 2 * (this.segmentSize + 1024);
  }

  /** Gives up what this thread shares with a thread that died. */
  private onThreadLost(threadIndex: number, cause: Error): void {
    for (const view of [...this.views]) {
      if (view.producerThread === threadIndex) view.onProducerLost(cause);
    }
    for (const reader of [...this.readers]) {
      if (reader.consumerThread === threadIndex) reader.onConsumerLost();
    }
  }

  /**
   * The environment closes: waiting requests are dropped, the views of other threads' partitions
   * released, and this thread's readers stop (what they lent comes back as it is recycled, or
   * with this thread's end).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const request of this.pending) request.cancelled = true;
    for (const view of [...this.views]) view.releaseAllResources();
    for (const reader of [...this.readers]) reader.close();
  }
}
