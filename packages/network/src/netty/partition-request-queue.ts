import { CancelledError, type InputChannelID } from "@sluice/core";
import { errorToErrorResponse } from "../protocol/error-response.js";
import { encodeBufferResponseHeader, encodeMessage } from "../protocol/message-encoder.js";
import { MessageId } from "../protocol/message-id.js";
import type {
  CreditBasedSequenceNumberingViewReader,
  ReaderQueue,
} from "./credit-based-sequence-numbering-view-reader.js";
import type { TransportConnection } from "./transport.js";

/** How many messages one write turn sends before yielding to the event loop. */
const MAX_MESSAGES_PER_TURN = 64;

/**
 * The per-connection "queue of queues" of the data server (Flink's PartitionRequestQueue).
 * Readers with something to send (data with credit, or an event) wait in FIFO order; the queue
 * writes one message per reader turn and re-enqueues a reader that has more, so the channels that
 * share a connection are served fairly. It writes only while the connection is writable and
 * resumes on drain, so socket buffers stay bounded; a write turn is bounded and then yields with
 * setImmediate, so timers (the OutputFlusher) and incoming credit always get their turn.
 */
export class PartitionRequestQueue implements ReaderQueue {
  private readonly connection: TransportConnection;
  private readonly available: CreditBasedSequenceNumberingViewReader[] = [];
  private readonly allReaders = new Map<string, CreditBasedSequenceNumberingViewReader>();
  private writeScheduled = false;
  private closed = false;

  constructor(connection: TransportConnection) {
    this.connection = connection;
  }

  /** Registers a new reader (on PartitionRequest). */
  notifyReaderCreated(reader: CreditBasedSequenceNumberingViewReader): void {
    this.allReaders.set(reader.receiverId.toString(), reader);
  }

  getReader(receiverId: InputChannelID): CreditBasedSequenceNumberingViewReader | undefined {
    return this.allReaders.get(receiverId.toString());
  }

  getNumberOfReaders(): number {
    return this.allReaders.size;
  }

  notifyReaderNonEmpty(reader: CreditBasedSequenceNumberingViewReader): void {
    if (this.closed || reader.isReleased()) return;
    if (!reader.isAvailable()) {
      this.announceBacklogIfNeeded(reader);
      return;
    }
    this.enqueue(reader);
  }

  /** The reader's partition request failed (e.g. PartitionNotFound after the timeout). */
  notifyReaderFailed(reader: CreditBasedSequenceNumberingViewReader, cause: Error): void {
    if (this.closed) return;
    this.removeReader(reader);
    this.connection.write([encodeMessage(errorToErrorResponse(cause, reader.receiverId))]);
  }

  /** Applies AddCredit / ResumeConsumption to a reader and re-enqueues it if it can send now. */
  addCreditOrResumeConsumption(
    receiverId: InputChannelID,
    operation: (reader: CreditBasedSequenceNumberingViewReader) => void,
  ): void {
    const reader = this.allReaders.get(receiverId.toString());
    if (reader === undefined) return; // cancelled meanwhile: Flink ignores it too
    operation(reader);
    this.notifyReaderNonEmpty(reader);
  }

  /** CancelPartitionRequest: releases the reader of `receiverId`. */
  cancel(receiverId: InputChannelID): void {
    const reader = this.allReaders.get(receiverId.toString());
    if (reader !== undefined) this.removeReader(reader);
  }

  private removeReader(reader: CreditBasedSequenceNumberingViewReader): void {
    this.allReaders.delete(reader.receiverId.toString());
    const index = this.available.indexOf(reader);
    if (index >= 0) this.available.splice(index, 1);
    reader.registeredAsAvailable = false;
    reader.releaseAllResources();
  }

  private enqueue(reader: CreditBasedSequenceNumberingViewReader): void {
    if (reader.registeredAsAvailable) return;
    reader.registeredAsAvailable = true;
    this.available.push(reader);
    this.scheduleWrite();
  }

  private announceBacklogIfNeeded(reader: CreditBasedSequenceNumberingViewReader): void {
    if (!reader.needAnnounceBacklog()) return;
    const backlog = reader.getBacklog();
    if (backlog <= 0) return;
    this.connection.write([
      encodeMessage({ id: MessageId.BACKLOG_ANNOUNCEMENT, backlog, receiverId: reader.receiverId }),
    ]);
  }

  /** The connection drained: continue writing. */
  onDrain(): void {
    this.scheduleWrite();
  }

  private scheduleWrite(): void {
    if (this.writeScheduled || this.closed) return;
    this.writeScheduled = true;
    setImmediate(() => {
      this.writeScheduled = false;
      this.writeTurn();
    });
  }

  /** Writes up to MAX_MESSAGES_PER_TURN messages while the connection is writable. */
  private writeTurn(): void {
    let sent = 0;
    while (!this.closed && this.connection.isWritable() && sent < MAX_MESSAGES_PER_TURN) {
      const reader = this.available.shift();
      if (reader === undefined) return;
      reader.registeredAsAvailable = false;
      if (reader.isReleased()) continue;
      let next: ReturnType<CreditBasedSequenceNumberingViewReader["getNextBuffer"]>;
      try {
        next = reader.getNextBuffer();
      } catch (error) {
        this.notifyReaderFailed(reader, error as Error);
        continue;
      }
      if (next === undefined) {
        const view = reader.getView();
        if (view?.isReleased()) {
          // The producer released the partition (failure or cancel) before finishing it: tell
          // the consumer instead of leaving it waiting forever.
          const cause =
            view.getFailureCause() ??
            new CancelledError(
              `result partition of receiver ${reader.receiverId} was released by the producer`,
            );
          this.notifyReaderFailed(reader, cause);
        }
        continue;
      }
      const { buffer } = next;
      const header = encodeBufferResponseHeader({
        receiverId: reader.receiverId,
        subpartitionId: 0,
        partialBufferSizes: [],
        sequenceNumber: next.sequenceNumber,
        backlog: next.backlog,
        dataType: buffer.getDataType(),
        isCompressed: buffer.isCompressed(),
        bufferSize: buffer.getSize(),
      });
      // The payload goes out as a view of the segment: no copy. It is recycled once written.
      this.connection.write([header, buffer.view()], () => buffer.recycleBuffer());
      sent++;
      if (next.moreAvailable) this.enqueue(reader);
    }
    if (this.available.length > 0 && this.connection.isWritable()) this.scheduleWrite();
    // Otherwise onDrain() schedules the next turn.
  }

  /** Releases every reader (connection closed or CloseRequest). Idempotent. */
  releaseAllResources(): void {
    if (this.closed) return;
    this.closed = true;
    for (const reader of this.allReaders.values()) reader.releaseAllResources();
    this.allReaders.clear();
    this.available.length = 0;
  }
}
