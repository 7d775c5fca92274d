import {
  IllegalStateError,
  type InputChannelID,
  type NetworkBuffer,
  type ResultPartitionID,
} from "@sluice/core";
import { isDataAvailable, isEventAvailable } from "../../partition/buffer-and-backlog.js";
import type { BufferAvailabilityListener } from "../../partition/buffer-availability-listener.js";
import type {
  PartitionRequestListener,
  ResultPartitionProvider,
} from "../../partition/result-partition-provider.js";
import type { ResultSubpartitionView } from "../../partition/result-subpartition-view.js";

/** Where a reader reports that it has something to send (the connection's PartitionRequestQueue). */
export interface ReaderQueue {
  notifyReaderNonEmpty(reader: CreditBasedSequenceNumberingViewReader): void;
  notifyReaderFailed(reader: CreditBasedSequenceNumberingViewReader, cause: Error): void;
}

/** The next buffer to send for one receiver. */
export interface ReaderBuffer {
  readonly buffer: NetworkBuffer;
  readonly sequenceNumber: number;
  readonly backlog: number;
  readonly moreAvailable: boolean;
}

/**
 * The server-side reader of one remote input channel (Flink's
 * CreditBasedSequenceNumberingViewReader): it owns the subpartition view requested by that
 * channel and the credit the channel granted. A data buffer is handed out only against credit;
 * events always (they take no buffer at the receiver).
 */
export class CreditBasedSequenceNumberingViewReader
  implements BufferAvailabilityListener, PartitionRequestListener
{
  readonly receiverId: InputChannelID;
  readonly initialCredit: number;
  private readonly queue: ReaderQueue;
  private numCreditsAvailable: number;
  private view: ResultSubpartitionView | undefined;
  /** Set while the request waits for its partition to register (cancelled on release). */
  private waitingAt: ResultPartitionProvider | undefined;
  private released = false;
  /** Set while the reader sits in the queue's available list. */
  registeredAsAvailable = false;
  partitionId: ResultPartitionID | undefined;

  constructor(receiverId: InputChannelID, initialCredit: number, queue: ReaderQueue) {
    this.receiverId = receiverId;
    this.initialCredit = initialCredit;
    this.numCreditsAvailable = initialCredit;
    this.queue = queue;
  }

  /**
   * Creates the view now, or waits up to `timeoutMs` for the partition to register (then the
   * queue is told about the failure with PartitionNotFoundError).
   */
  requestSubpartitionViewOrRegisterListener(
    manager: ResultPartitionProvider,
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    timeoutMs: number,
  ): void {
    if (this.view !== undefined) {
      throw new IllegalStateError(`reader ${this.receiverId} already has a view`);
    }
    this.partitionId = partitionId;
    const view = manager.createSubpartitionViewOrRegisterListener(
      partitionId,
      subpartitionIndex,
      this,
      this,
      timeoutMs,
    );
    if (view !== undefined) this.notifyPartitionCreated(view);
    else this.waitingAt = manager;
  }

  notifyPartitionCreated(view: ResultSubpartitionView): void {
    this.waitingAt = undefined;
    if (this.released) {
      view.releaseAllResources();
      return;
    }
    this.view = view;
    this.queue.notifyReaderNonEmpty(this);
  }

  notifyPartitionCreateFailed(cause: Error): void {
    this.waitingAt = undefined;
    this.queue.notifyReaderFailed(this, cause);
  }

  notifyDataAvailable(): void {
    this.queue.notifyReaderNonEmpty(this);
  }

  /** The consumer granted `credit` more buffers. */
  addCredit(credit: number): void {
    this.numCreditsAvailable += credit;
  }

  getNumCreditsAvailable(): number {
    return this.numCreditsAvailable;
  }

  /**
   * After an aligned barrier: with no exclusive buffers the consumer released its floating ones,
   * so the credit starts over at zero (Flink's rule).
   */
  resumeConsumption(): void {
    if (this.initialCredit === 0) this.numCreditsAvailable = 0;
    this.view?.resumeConsumption();
  }

  acknowledgeAllRecordsProcessed(): void {
    this.view?.acknowledgeAllDataProcessed();
  }

  notifyNewBufferSize(size: number): void {
    this.view?.notifyNewBufferSize(size);
  }

  /** Whether something can be sent now (data with credit, or an event). */
  isAvailable(): boolean {
    if (this.view === undefined || this.released) return false;
    if (this.view.isReleased()) return true; // the queue reports the release
    return this.view.getAvailabilityAndBacklog(this.numCreditsAvailable).isAvailable;
  }

  /** With 0 exclusive buffers and no credit, the consumer must learn about a backlog to ask for buffers. */
  needAnnounceBacklog(): boolean {
    return this.initialCredit === 0 && this.numCreditsAvailable === 0;
  }

  getBacklog(): number {
    return this.view?.getAvailabilityAndBacklog(this.numCreditsAvailable).backlog ?? 0;
  }

  /** The view, once created. */
  getView(): ResultSubpartitionView | undefined {
    return this.view;
  }

  /**
   * Takes the next buffer. A data buffer consumes one credit; going below zero would mean the
   * queue broke the credit rule, which is a bug, so it throws.
   */
  getNextBuffer(): ReaderBuffer | undefined {
    const view = this.view;
    if (view === undefined) return undefined;
    const next = view.getNextBuffer();
    if (next === undefined) return undefined;
    if (next.buffer.isBuffer() && --this.numCreditsAvailable < 0) {
      next.buffer.recycleBuffer();
      throw new IllegalStateError(`reader ${this.receiverId}: sent a buffer without credit`);
    }
    return {
      buffer: next.buffer,
      sequenceNumber: next.sequenceNumber,
      backlog: next.buffersInBacklog,
      // More to send now: something is queued and either credit remains or it is an event.
      moreAvailable:
        isDataAvailable(next) && (this.numCreditsAvailable > 0 || isEventAvailable(next)),
    };
  }

  isReleased(): boolean {
    return this.released;
  }

  /** Releases the view (the subpartition counts as consumed). Idempotent. */
  releaseAllResources(): void {
    if (this.released) return;
    this.released = true;
    // A request still waiting for its partition stops waiting: otherwise a late registration
    // would consume the subpartition for a receiver that is gone (Flink releases the listener).
    if (this.waitingAt !== undefined && this.partitionId !== undefined) {
      this.waitingAt.cancelWaitingRequest(this.partitionId, this);
      this.waitingAt = undefined;
    }
    this.view?.releaseAllResources();
  }

  toString(): string {
    return `CreditBasedSequenceNumberingViewReader[${this.receiverId}, credit=${this.numCreditsAvailable}]`;
  }
}
