import {
  CancelledError,
  ErrorCodes,
  IllegalStateError,
  type InputChannelID,
  isSluiceError,
  LimitExceededError,
  ProducerFailedError,
} from "@sluice/core";
import { errorToErrorResponse } from "../../protocol/error-response.js";
import { encodeBufferResponseHeader, encodeMessage } from "../../protocol/message-encoder.js";
import { MessageId } from "../../protocol/message-id.js";
import type { TransportConnection } from "../transport/transport.js";
import type {
  CreditBasedSequenceNumberingViewReader,
  ReaderQueue,
} from "./credit-based-sequence-numbering-view-reader.js";

/** How many messages one write turn sends before yielding to the event loop. */
const MAX_MESSAGES_PER_TURN = 64;

/** Control frames joined into one transport write: a bounded batch of small frames. */
const MAX_CONTROL_BYTES_PER_WRITE = 64 * 1024;

/** Frame size of a BacklogAnnouncement (header 9 + backlog 4 + receiver id 16). */
const BACKLOG_ANNOUNCEMENT_BYTES = 29;

/** Default of `taskmanager.network.max-outbound-bytes-per-connection`. */
const DEFAULT_MAX_OUTBOUND_BYTES = 1024 * 1024;

/** A control message waiting for the connection to be writable. */
interface ControlMessage {
  /** An encoded frame (error responses), or undefined for `backlogOf`. */
  readonly frame: Buffer | undefined;
  /** A BacklogAnnouncement of this reader, encoded when written (with the backlog then). */
  readonly backlogOf: CreditBasedSequenceNumberingViewReader | undefined;
  readonly bytes: number;
}

/** Who stops and restarts reading from the peer when the outbound budget is used. */
export interface ReadingControl {
  pause(): void;
  resume(): void;
}

/** Limits of a PartitionRequestQueue. */
export interface PartitionRequestQueueOptions {
  /**
   * Bytes the queue may hold for the peer before it stops reading from it: control messages not
   * written yet plus everything written that the transport has not handed on
   * (`taskmanager.network.max-outbound-bytes-per-connection`). Reading resumes below half of it;
   * control messages beyond twice it close the connection.
   */
  readonly maxOutboundBytes?: number;
  /** Pauses and resumes reading from the peer; default: the connection itself. */
  readonly readingControl?: ReadingControl;
  /**
   * A write turn threw (a bug on this side, e.g. a message the encoder rejects that no reader
   * can be blamed for): the connection must fail with `cause`. The server handler answers with
   * a fatal ErrorResponse; default: the connection is destroyed. Either way the queue is
   * released; the process goes on.
   */
  readonly onWriteFailed?: (cause: Error) => void;
}

/**
 * The per-connection "queue of queues" of the data server (Flink's PartitionRequestQueue).
 * Readers with something to send (data with credit, or an event) wait in FIFO order; the queue
 * writes one message per reader turn and re-enqueues a reader that has more, so the channels that
 * share a connection are served fairly. It writes only while the connection is writable and
 * resumes on drain, so socket buffers stay bounded; a write turn is bounded and then yields with
 * setImmediate, so timers (the OutputFlusher) and incoming credit always get their turn.
 *
 * Every outbound message counts against one budget per connection. Control messages (error
 * responses, backlog announcements) wait in a queue of their own and are written ahead of data,
 * also only while the connection is writable. A peer that keeps sending requests which earn
 * replies but never reads them makes the queue pause reading from it once the budget is used
 * (its requests then back up in its own socket), and close the connection should replies that
 * were already on their way exceed twice the budget. Backlog announcements are coalesced: at most
 * one per reader waits, carrying the backlog of the moment it is written.
 */
export class PartitionRequestQueue implements ReaderQueue {
  private readonly connection: TransportConnection;
  /** Readers with something to send; a Set keeps FIFO order and removes in O(1). */
  private readonly available = new Set<CreditBasedSequenceNumberingViewReader>();
  private readonly allReaders = new Map<string, CreditBasedSequenceNumberingViewReader>();
  private readonly control: ControlMessage[] = [];
  private readonly announcing = new Set<CreditBasedSequenceNumberingViewReader>();
  private readonly maxOutboundBytes: number;
  private readonly readingControl: ReadingControl;
  private readonly onWriteFailed: (cause: Error) => void;
  private controlBytes = 0;
  /** Bytes handed to the transport whose write has not completed yet. */
  private inFlightBytes = 0;
  /** Resolved when no write is in flight any more (see `whenWritesDone`). */
  private readonly writesDoneWaiters: (() => void)[] = [];
  private readingPaused = false;
  private writeScheduled = false;
  private closed = false;

  constructor(connection: TransportConnection, options: PartitionRequestQueueOptions = {}) {
    this.connection = connection;
    this.maxOutboundBytes = options.maxOutboundBytes ?? DEFAULT_MAX_OUTBOUND_BYTES;
    this.readingControl = options.readingControl ?? connection;
    this.onWriteFailed = options.onWriteFailed ?? ((cause) => connection.destroy(cause));
  }

  /** Registers a new reader (on PartitionRequest). */
  notifyReaderCreated(reader: CreditBasedSequenceNumberingViewReader): void {
    this.allReaders.set(reader.receiverId.toString(), reader);
  }

  getReader(receiverId: InputChannelID): CreditBasedSequenceNumberingViewReader | undefined {
    return this.allReaders.get(receiverId.toString());
  }

  /** Readers registered on this connection, including failed ones not yet cancelled. */
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

  /**
   * The reader's partition request failed before it had a view (PartitionNotFound after the
   * timeout, or at once): it is forgotten, as in Flink, and the consumer is told.
   */
  notifyReaderFailed(reader: CreditBasedSequenceNumberingViewReader, cause: Error): void {
    if (this.closed) return;
    this.removeReader(reader);
    this.sendError(cause, reader.receiverId);
  }

  /**
   * Applies AddCredit / ResumeConsumption to a reader and re-enqueues it if it can send now.
   * Returns false when the connection has no reader for `receiverId`: as in Flink, the caller
   * treats that as a protocol violation (a correct client never sends credit for a request it
   * did not make or already cancelled). A reader that failed stays registered until the client
   * cancels it, so credit that crossed the failure on the wire is not mistaken for one.
   */
  addCreditOrResumeConsumption(
    receiverId: InputChannelID,
    operation: (reader: CreditBasedSequenceNumberingViewReader) => void,
  ): boolean {
    const reader = this.allReaders.get(receiverId.toString());
    if (reader === undefined) return false;
    if (reader.isReleased()) return true;
    operation(reader);
    this.notifyReaderNonEmpty(reader);
    return true;
  }

  /** CancelPartitionRequest: releases the reader of `receiverId`. */
  cancel(receiverId: InputChannelID): void {
    const reader = this.allReaders.get(receiverId.toString());
    if (reader !== undefined) this.removeReader(reader);
  }

  private removeReader(reader: CreditBasedSequenceNumberingViewReader): void {
    this.allReaders.delete(reader.receiverId.toString());
    this.releaseReader(reader);
  }

  /** Releases the reader's view but keeps it registered (Flink keeps failed readers). */
  private releaseReader(reader: CreditBasedSequenceNumberingViewReader): void {
    this.available.delete(reader);
    reader.registeredAsAvailable = false;
    reader.releaseAllResources();
  }

  /** A reader that had a view failed (the producer released the partition, a read threw). */
  private failReader(reader: CreditBasedSequenceNumberingViewReader, cause: Error): void {
    this.releaseReader(reader);
    this.sendError(cause, reader.receiverId);
  }

  private enqueue(reader: CreditBasedSequenceNumberingViewReader): void {
    if (reader.registeredAsAvailable) return;
    reader.registeredAsAvailable = true;
    this.available.add(reader);
    this.scheduleWrite();
  }

  private announceBacklogIfNeeded(reader: CreditBasedSequenceNumberingViewReader): void {
    if (!reader.needAnnounceBacklog() || this.announcing.has(reader)) return;
    if (reader.getBacklog() <= 0) return;
    this.announcing.add(reader);
    this.queueControl({
      frame: undefined,
      backlogOf: reader,
      bytes: BACKLOG_ANNOUNCEMENT_BYTES,
    });
  }

  /** Queues an ErrorResponse for `receiverId` (non-fatal: only that channel fails). */
  sendError(cause: Error, receiverId: InputChannelID): void {
    if (this.closed) return;
    const frame = encodeMessage(errorToErrorResponse(cause, receiverId));
    this.queueControl({ frame, backlogOf: undefined, bytes: frame.length });
  }

  private queueControl(message: ControlMessage): void {
    this.control.push(message);
    this.controlBytes += message.bytes;
    if (this.controlBytes > 2 * this.maxOutboundBytes) {
      // Reading pauses at the budget, and the server decodes what it already read in small
      // slices, checking in between; only a peer whose replies still outgrow twice the budget
      // gets here: give up on it rather than grow.
      this.connection.destroy(
        new LimitExceededError(
          `${this.controlBytes} bytes of replies queued for ${this.connection.remoteAddress}, ` +
            `which does not read them: more than twice ${this.maxOutboundBytes} bytes ` +
            "('taskmanager.network.max-outbound-bytes-per-connection'); connection closed",
        ),
      );
      this.releaseAllResources();
      return;
    }
    this.checkBudget();
    this.scheduleWrite();
  }

  /** Bytes held for the peer: queued control messages plus writes not completed yet. */
  getQueuedOutboundBytes(): number {
    return this.controlBytes + this.inFlightBytes;
  }

  /** Whether the queue stopped reading from the peer because the outbound budget is used. */
  isReadingPaused(): boolean {
    return this.readingPaused;
  }

  private checkBudget(): void {
    if (this.closed) return;
    const queued = this.controlBytes + this.inFlightBytes;
    if (!this.readingPaused && queued >= this.maxOutboundBytes) {
      this.readingPaused = true;
      this.readingControl.pause();
    } else if (this.readingPaused && queued <= this.maxOutboundBytes / 2) {
      this.readingPaused = false;
      this.readingControl.resume();
    }
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
      try {
        this.writeTurn();
      } catch (error) {
        // Thrown from a setImmediate callback, it would end the worker process: fail only this
        // connection, whose consumers learn why.
        this.failWrites(error as Error);
      }
    });
  }

  private failWrites(error: Error): void {
    if (this.closed) return;
    const cause = new IllegalStateError(
      `the data server failed to write to ${this.connection.remoteAddress}: ${error.message}`,
      { cause: error },
    );
    this.releaseAllResources();
    this.onWriteFailed(cause);
  }

  /**
   * Resolves once every write handed to the connection has called back, which a transport does
   * on success and on failure alike (a destroyed connection errors its queued writes). The
   * buffers those writes carried are recycled by then.
   */
  whenWritesDone(): Promise<void> {
    if (this.inFlightBytes === 0) return Promise.resolve();
    return new Promise((resolve) => this.writesDoneWaiters.push(resolve));
  }

  /** A write of `bytes` completed (or failed): they no longer count against the budget. */
  private onWriteDone(bytes: number): void {
    this.inFlightBytes -= bytes;
    if (this.inFlightBytes === 0) {
      for (const resolve of this.writesDoneWaiters.splice(0)) resolve();
    }
    if (this.readingPaused) this.checkBudget();
  }

  /** Writes queued control messages (as bounded batches) while the connection is writable. */
  private writeControl(): void {
    while (this.control.length > 0 && !this.closed && this.connection.isWritable()) {
      const frames: Buffer[] = [];
      let batchBytes = 0;
      let taken = 0;
      while (taken < this.control.length && batchBytes < MAX_CONTROL_BYTES_PER_WRITE) {
        const message = this.control[taken++] as ControlMessage;
        this.controlBytes -= message.bytes;
        const frame = message.frame ?? this.encodeBacklogAnnouncement(message.backlogOf);
        if (frame === undefined) continue;
        frames.push(frame);
        batchBytes += frame.length;
      }
      this.control.splice(0, taken);
      if (frames.length === 0) continue;
      this.inFlightBytes += batchBytes;
      this.connection.write(frames, () => this.onWriteDone(batchBytes));
    }
  }

  private encodeBacklogAnnouncement(
    reader: CreditBasedSequenceNumberingViewReader | undefined,
  ): Buffer | undefined {
    if (reader === undefined) return undefined;
    this.announcing.delete(reader);
    // Taken now: the backlog may have grown, or credit arrived, since it was queued.
    if (reader.isReleased() || !reader.needAnnounceBacklog()) return undefined;
    const backlog = reader.getBacklog();
    if (backlog <= 0) return undefined;
    return encodeMessage({
      id: MessageId.BACKLOG_ANNOUNCEMENT,
      backlog,
      receiverId: reader.receiverId,
    });
  }

  /**
   * Writes up to MAX_MESSAGES_PER_TURN messages while the connection is writable, corked, so a
   * stream transport sends the whole turn (up to its high-water mark) in one writev instead of
   * one system call per BufferResponse.
   */
  private writeTurn(): void {
    const connection = this.connection;
    connection.cork?.();
    try {
      this.writeCorkedTurn();
    } finally {
      connection.uncork?.();
    }
  }

  private writeCorkedTurn(): void {
    this.writeControl();
    let sent = 0;
    const available = this.available;
    // A Set iterator sees readers re-added during the turn: they go to the back, fairly.
    for (const reader of available) {
      if (this.closed || !this.connection.isWritable() || sent >= MAX_MESSAGES_PER_TURN) break;
      available.delete(reader);
      reader.registeredAsAvailable = false;
      if (reader.isReleased()) continue;
      let next: ReturnType<CreditBasedSequenceNumberingViewReader["getNextBuffer"]>;
      try {
        next = reader.getNextBuffer();
      } catch (error) {
        this.failReader(reader, error as Error);
        continue;
      }
      if (next === undefined) {
        const view = reader.getView();
        if (view?.isReleased()) {
          // The producer released the partition (failure or cancel) before finishing it: tell
          // the consumer instead of leaving it waiting forever.
          const failure = view.getFailureCause();
          const cause =
            failure === undefined
              ? new CancelledError(
                  `result partition of receiver ${reader.receiverId} was released by the producer`,
                )
              : asProducerFailure(failure, reader.receiverId);
          this.failReader(reader, cause);
        }
        continue;
      }
      const { buffer } = next;
      let header: Buffer;
      try {
        header = encodeBufferResponseHeader({
          receiverId: reader.receiverId,
          subpartitionId: 0,
          partialBufferSizes: [],
          sequenceNumber: next.sequenceNumber,
          backlog: next.backlog,
          dataType: buffer.getDataType(),
          isCompressed: buffer.isCompressed(),
          bufferSize: buffer.getSize(),
        });
      } catch (error) {
        // A field the decoder would reject: this channel cannot go on, the others can.
        buffer.recycleBuffer();
        this.failReader(
          reader,
          new IllegalStateError(
            `cannot send buffer ${next.sequenceNumber} to receiver ${reader.receiverId}: ${(error as Error).message}`,
            { cause: error },
          ),
        );
        continue;
      }
      const bytes = header.length + buffer.getSize();
      this.inFlightBytes += bytes;
      // The payload goes out as a view of the segment: no copy. It is recycled once written.
      this.connection.write([header, buffer.view()], () => {
        buffer.recycleBuffer();
        this.onWriteDone(bytes);
      });
      sent++;
      if (next.moreAvailable) this.enqueue(reader);
    }
    this.writeControl();
    if (this.closed || !this.connection.isWritable()) {
      this.checkBudget();
      return; // onDrain() schedules the next turn
    }
    if (available.size > 0 || this.control.length > 0) this.scheduleWrite();
    this.checkBudget();
  }

  /** Releases every reader (connection closed or CloseRequest). Idempotent. */
  releaseAllResources(): void {
    if (this.closed) return;
    this.closed = true;
    for (const reader of this.allReaders.values()) reader.releaseAllResources();
    this.allReaders.clear();
    this.available.clear();
    this.announcing.clear();
    // Replies to a peer that is gone are moot; what they hold is plain memory.
    this.control.length = 0;
    this.controlBytes = 0;
  }
}

/**
 * What a consumer learns when its producer failed the partition: the producer's error inside a
 * `ProducerFailedError` (Flink's `ProducerFailedException`), so the consumer's own failure reads
 * as a consequence and the job side takes the producer's report as the root cause whichever
 * arrives first. A cancel, a damaged file, a lost partition and an already wrapped failure keep
 * their own codes: consumers and the job side act on those.
 */
function asProducerFailure(failure: Error, receiverId: unknown): Error {
  if (
    isSluiceError(failure, ErrorCodes.CANCELLED) ||
    isSluiceError(failure, ErrorCodes.PRODUCER_FAILED) ||
    isSluiceError(failure, ErrorCodes.PARTITION_NOT_FOUND) ||
    isSluiceError(failure, ErrorCodes.PARTITION_FILE_CORRUPTED)
  ) {
    return failure;
  }
  return new ProducerFailedError(
    `the producer of receiver ${String(receiverId)}'s partition failed: ${failure.message}`,
    { cause: failure },
  );
}
