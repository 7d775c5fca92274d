import {
  DataType,
  isPartitionException,
  LimitExceededError,
  type NetworkBuffer,
  type SharedNetworkMemory,
  type ThreadDoorbell,
} from "@sluice/core";
import type { BufferAndBacklog } from "../partition/buffer-and-backlog.js";
import type { BufferAvailabilityListener } from "../partition/buffer-availability-listener.js";
import type { ResultSubpartitionView } from "../partition/result-subpartition-view.js";
import {
  RecordKind,
  ReturnKind,
  type SharedSubpartitionQueue,
} from "./shared-subpartition-queue.js";

const ENCODER = new TextEncoder();

/** A release's cause as the bytes of a {@link RecordKind.RELEASED} record. */
export function encodeReleaseCause(cause: Error | undefined): Uint8Array {
  if (cause === undefined) return new Uint8Array(0);
  const code = (cause as { code?: unknown }).code;
  return ENCODER.encode(
    JSON.stringify({
      name: cause.name,
      message: cause.message.slice(0, 2048),
      ...(typeof code === "string" ? { code } : {}),
      ...(isPartitionException(cause) ? { partitionId: String(cause.partitionId) } : {}),
    }),
  );
}

/**
 * The producer's end of a subpartition view read by another thread of the task manager (the
 * cross-thread counterpart of the data server's CreditBasedSequenceNumberingViewReader): it takes
 * what the view has into the shared queue as long as the queue has room, a buffer of a shared
 * segment by reference (lent to the consumer's thread, which reads it in place) and anything else
 * (events) copied. It recycles each lent buffer when the consumer returns it, and carries out the
 * consumer's resume, buffer size, acknowledgement and release on the view.
 *
 * The queue's room is the consumer's credit: what does not fit waits in the subpartition, where
 * it counts in the backlog and against `max-buffers-per-channel`, so a slow consumer thread holds
 * back only what its own channel may hold.
 */
export class CrossThreadViewReader implements BufferAvailabilityListener {
  /** The remote channel's exclusive buffers when the consumer is the data server; else absent. */
  readonly initialCredit?: number;
  private queue: SharedSubpartitionQueue | undefined;
  private readonly memory: SharedNetworkMemory;
  private readonly doorbell: ThreadDoorbell;
  private readonly onDisposed: (reader: CrossThreadViewReader) => void;
  /** This end's doorbell endpoint: the consumer rings it for returns and room. */
  readonly endpoint: number;
  private view: ResultSubpartitionView | undefined;
  /** Buffers lent to the consumer, by id, until it returns them. */
  private readonly lent = new Map<number, NetworkBuffer>();
  private nextId = 0;
  /** Taken from the view when the queue was full: pushed first. */
  private held: BufferAndBacklog | undefined;
  private pumpScheduled = false;
  private releasePushed = false;
  private consumerReleased = false;
  private disposed = false;

  /**
   * @param consumerThread - the thread that will read the queue.
   * @param initialCredit - the remote channel's exclusive buffers when the consumer is the data
   *   server (it decides the empty-buffer rule of the subpartition); absent for a local channel.
   */
  constructor(
    memory: SharedNetworkMemory,
    doorbell: ThreadDoorbell,
    readonly consumerThread: number,
    onDisposed: (reader: CrossThreadViewReader) => void,
    initialCredit: number | undefined,
  ) {
    this.memory = memory;
    this.doorbell = doorbell;
    this.onDisposed = onDisposed;
    if (initialCredit !== undefined) this.initialCredit = initialCredit;
    this.endpoint = doorbell.register(() => this.onRung());
  }

  /**
   * Starts reading `view` (created with this reader as its listener) into `queue`, whose size
   * suits the view's buffers.
   */
  start(view: ResultSubpartitionView, queue: SharedSubpartitionQueue): void {
    queue.setProducer(this.doorbell.threadIndex, this.endpoint);
    this.queue = queue;
    this.view = view;
    if (this.disposed) {
      view.releaseAllResources();
      return;
    }
    this.schedulePump();
  }

  notifyDataAvailable(): void {
    this.schedulePump();
  }

  notifyPriorityEvent(): void {
    this.schedulePump();
  }

  /**
   * The subpartition calls back while it is adding a buffer: take from it once that call
   * returned, and at most once however many buffers it adds meanwhile.
   */
  private schedulePump(): void {
    if (this.pumpScheduled || this.disposed) return;
    this.pumpScheduled = true;
    queueMicrotask(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /** Moves what the view has into the queue while it fits; rings the consumer when it pushed. */
  private pump(): void {
    const view = this.view;
    const queue = this.queue;
    if (view === undefined || queue === undefined || this.disposed) return;
    if (this.releasePushed || this.consumerReleased) return;
    // Returns the consumer sent since: read while producing, they need no ring.
    this.takeReturns(queue);
    let pushed = false;
    for (;;) {
      const next = this.held ?? view.getNextBuffer();
      if (next === undefined) {
        if (view.isReleased()) pushed = this.pushRelease(view.getFailureCause()) || pushed;
        queue.setBacklog(0);
        break;
      }
      const outcome = this.push(next);
      if (outcome === "full") {
        // Taken from the view but not pushed: it goes first once the consumer made room.
        this.held = next;
        break;
      }
      this.held = undefined;
      if (outcome === "too-large") {
        pushed = this.pushRelease(this.tooLarge(next.buffer)) || pushed;
        next.buffer.recycleBuffer();
        view.releaseAllResources();
        break;
      }
      queue.setBacklog(next.buffersInBacklog);
      pushed = true;
    }
    // A busy consumer finds the records without a ring; one that found the ring empty asked.
    if (pushed) {
      if (queue.takeDataWanted()) this.ringConsumer(queue);
      // This thread produces: the consumer's returns need not wake it.
      this.doorbell.markActive();
    }
    this.askForReturns(queue);
  }

  /** Reads the returns there are now. */
  private takeReturns(queue: SharedSubpartitionQueue): void {
    for (let entry = queue.pollReturn(); entry !== undefined; entry = queue.pollReturn()) {
      this.handleReturn(entry.kind, entry.id, entry.segment, entry.value);
    }
    if (queue.takeReturnSpaceWanted()) this.ringConsumer(queue);
  }

  /**
   * With buffers lent out, the producer may wait for them (its pool runs dry): the consumer rings
   * it with its next return. Returns that came in meanwhile are read now.
   */
  private askForReturns(queue: SharedSubpartitionQueue): void {
    while (this.lent.size > 0 && !this.disposed && queue.wantReturns()) {
      this.takeReturns(queue);
    }
  }

  /** Rings the consumer, once it attached to the queue. */
  private ringConsumer(queue: SharedSubpartitionQueue): void {
    const thread = queue.consumerThread;
    if (thread >= 0) this.doorbell.ring(thread, queue.consumerEndpoint);
  }

  /** Pushes one buffer: a shared segment's by reference, anything else copied. */
  private push(next: BufferAndBacklog): "pushed" | "full" | "too-large" {
    const queue = this.queue as SharedSubpartitionQueue;
    const buffer = next.buffer;
    const segment = buffer.isBuffer() ? this.memory.indexOf(buffer.getMemorySegment()) : -1;
    if (segment >= 0) {
      const id = this.nextId;
      // Lent before it is visible to the consumer, which may return it at once.
      this.memory.lend(segment);
      const done = queue.pushRef(
        buffer.getDataType(),
        segment,
        buffer.getMemorySegmentOffset() + buffer.getReaderIndex(),
        buffer.readableBytes(),
        next.sequenceNumber,
        next.buffersInBacklog,
        id,
        buffer.isCompressed(),
        buffer.partialRecordLength,
      );
      if (!done) {
        this.memory.returnLoan(segment);
        return "full";
      }
      this.nextId = (id + 1) | 0;
      this.lent.set(id, buffer);
      return "pushed";
    }
    const bytes = buffer.readableView();
    if (bytes.length > queue.maxInlineBytes) return "too-large";
    const done = queue.pushInline(
      RecordKind.INLINE,
      buffer.getDataType(),
      bytes,
      next.sequenceNumber,
      next.buffersInBacklog,
      buffer.isBuffer(),
      buffer.isCompressed(),
    );
    if (!done) return "full";
    buffer.recycleBuffer();
    return "pushed";
  }

  private tooLarge(buffer: NetworkBuffer): Error {
    return new LimitExceededError(
      `a ${DataType[buffer.getDataType()]} of ${buffer.readableBytes()} bytes does not fit into a record of the cross-thread queue (at most ${this.queue?.maxInlineBytes} bytes); only buffers of the task manager's network memory go between slot threads without a copy`,
    );
  }

  /**
   * Tells the consumer that the view was released (with its cause), at once: what is still
   * queued is not read any more. True the first time.
   */
  private pushRelease(cause: Error | undefined): boolean {
    const queue = this.queue;
    if (this.releasePushed || queue === undefined) return false;
    queue.markReleased(encodeReleaseCause(cause));
    this.releasePushed = true;
    // The consumer may be busy, or waiting: either way it learns of the release now.
    this.ringConsumer(queue);
    return true;
  }

  /** The consumer returned buffers, made room or released the view. */
  private onRung(): void {
    const queue = this.queue;
    if (this.disposed || queue === undefined) return;
    this.takeReturns(queue);
    this.pump();
    this.askForReturns(queue);
    this.disposeWhenDone();
  }

  private handleReturn(kind: number, id: number, segment: number, value: number): void {
    switch (kind) {
      case ReturnKind.RECYCLE: {
        const buffer = this.lent.get(id);
        this.lent.delete(id);
        // The loan goes first: the recycle may give the segment back to the free list.
        this.memory.returnLoan(segment);
        buffer?.recycleBuffer();
        return;
      }
      case ReturnKind.RESUME:
        this.view?.resumeConsumption();
        return;
      case ReturnKind.BUFFER_SIZE:
        this.view?.notifyNewBufferSize(value);
        return;
      case ReturnKind.ACK_ALL:
        this.view?.acknowledgeAllDataProcessed();
        return;
      case ReturnKind.RELEASE:
        this.consumerReleased = true;
        this.held?.buffer.recycleBuffer();
        this.held = undefined;
        this.view?.releaseAllResources();
        return;
    }
  }

  /**
   * The consumer's thread died: what it returned before is handled, every buffer still lent is
   * recycled here, and the view is released (the subpartition counts as consumed).
   */
  onConsumerLost(): void {
    if (this.disposed) return;
    const queue = this.queue;
    while (queue !== undefined) {
      const entry = queue.pollReturn();
      if (entry === undefined) break;
      this.handleReturn(entry.kind, entry.id, entry.segment, entry.value);
    }
    this.recycleLent();
    this.consumerReleased = true;
    this.view?.releaseAllResources();
    this.dispose();
  }

  /**
   * This thread's environment closes: the view is released and what is lent stays lent; the
   * consumer returns it (its recycles then go to the free list once this thread is gone).
   */
  close(): void {
    if (this.disposed) return;
    this.held?.buffer.recycleBuffer();
    this.held = undefined;
    this.view?.releaseAllResources();
    this.pushRelease(undefined);
    if (this.queue !== undefined) this.ringConsumer(this.queue);
    this.dispose();
  }

  /** Buffers lent to the consumer right now (for tests). */
  getNumberOfLentBuffers(): number {
    return this.lent.size;
  }

  private recycleLent(): void {
    this.held?.buffer.recycleBuffer();
    this.held = undefined;
    for (const [id, buffer] of this.lent) {
      this.lent.delete(id);
      this.memory.returnLoan(this.memory.indexOf(buffer.getMemorySegment()));
      buffer.recycleBuffer();
    }
  }

  private disposeWhenDone(): void {
    if (this.consumerReleased && this.lent.size === 0) this.dispose();
  }

  /**
   * Stops the reader before it was started (its view could not be made): it gives up its
   * endpoint.
   */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.doorbell.unregister(this.endpoint);
    this.onDisposed(this);
  }
}
