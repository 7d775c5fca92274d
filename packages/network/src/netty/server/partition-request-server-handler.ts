import {
  CancelledError,
  EventSerializer,
  IllegalArgumentError,
  IllegalStateError,
  isSluiceError,
  ProtocolError,
  TaskEvent,
  TimeoutError,
} from "@sluice/core";
import type { TaskEventPublisher } from "@sluice/runtime-api";
import type { ResultPartitionProvider } from "../../partition/result-partition-provider.js";
import { errorToErrorResponse } from "../../protocol/error-response.js";
import { encodeMessage } from "../../protocol/message-encoder.js";
import { MessageId } from "../../protocol/message-id.js";
import type { NettyMessage } from "../../protocol/netty-message.js";
import { NettyMessageDecoder } from "../../protocol/netty-message-decoder.js";
import { type DeadlineAfterPoll, deadlineAfterPoll } from "../transport/deadline-after-poll.js";
import type { ConnectionHandler, TransportConnection } from "../transport/transport.js";
import { CreditBasedSequenceNumberingViewReader } from "./credit-based-sequence-numbering-view-reader.js";
import { PartitionRequestQueue } from "./partition-request-queue.js";

/**
 * Input is decoded in slices of this many bytes, and not at all while reading is paused: a large
 * chunk (a WebSocket message can hold thousands of requests) cannot make the server produce
 * more than one slice's replies after the outbound budget was used.
 */
const DECODE_SLICE_BYTES = 8 * 1024;

/** Server-side limits and timeouts. */
export interface ServerHandlerOptions {
  readonly maxFrameSize: number;
  readonly partitionRequestTimeoutMs: number;
  /** PartitionRequests one connection may have open at once. */
  readonly maxPartitionRequestsPerConnection: number;
  /**
   * Bytes queued for the peer before the server stops reading from it
   * (`taskmanager.network.max-outbound-bytes-per-connection`); see PartitionRequestQueue.
   */
  readonly maxOutboundBytes?: number;
  /**
   * A connection without readers that sent nothing for this long is closed
   * (`taskmanager.network.idle-connection-timeout`). Absent: never.
   */
  readonly idleTimeoutMs?: number;
  /**
   * A frame whose first bytes arrived must be complete within this long
   * (`taskmanager.network.frame-read-timeout`). Absent: no limit.
   */
  readonly frameReadTimeoutMs?: number;
  /** Called once when the connection is gone and every reader was released. */
  readonly onClosed?: (handler: PartitionRequestServerHandler) => void;
}

/**
 * Serves one client connection of the data server (Flink's PartitionRequestServerHandler plus
 * its PartitionRequestQueue): decodes requests, creates credit-based readers, applies credit and
 * resume messages, and releases every reader when the connection ends. A protocol violation
 * answers with a fatal ErrorResponse and closes the connection; other connections are unaffected.
 *
 * Careless or hostile peers are bounded: a peer that does not read its replies is paused (see
 * PartitionRequestQueue); a connection that has no reader and sends nothing is closed after the
 * idle timeout; a frame that started must complete within the frame read timeout, so a peer
 * cannot hold the server with half a frame.
 */
export class PartitionRequestServerHandler implements ConnectionHandler {
  private readonly connection: TransportConnection;
  private readonly partitionManager: ResultPartitionProvider;
  private readonly taskEventPublisher: TaskEventPublisher | undefined;
  private readonly options: ServerHandlerOptions;
  private readonly decoder: NettyMessageDecoder;
  private readonly queue: PartitionRequestQueue;
  private closed = false;
  /** When bytes last arrived, or a reader was last seen (performance.now() ms). */
  private lastActivityAt = performance.now();
  /** When the frame the decoder is in the middle of started to arrive; -1 at a frame boundary. */
  private frameStartedAt = -1;
  /** The one timer of this connection's deadlines, re-armed for the nearest. */
  private watchdog: DeadlineAfterPoll | undefined;
  /** Input read but not decoded because reading paused (at most what arrived meanwhile). */
  private pendingInput: Buffer[] = [];

  constructor(
    connection: TransportConnection,
    partitionManager: ResultPartitionProvider,
    taskEventPublisher: TaskEventPublisher | undefined,
    options: ServerHandlerOptions,
  ) {
    this.connection = connection;
    this.partitionManager = partitionManager;
    this.taskEventPublisher = taskEventPublisher;
    this.options = options;
    this.queue = new PartitionRequestQueue(connection, {
      ...(options.maxOutboundBytes === undefined
        ? {}
        : { maxOutboundBytes: options.maxOutboundBytes }),
      readingControl: {
        pause: () => connection.pause(),
        resume: () => {
          if (this.pendingInput.length === 0) {
            connection.resume();
            return;
          }
          // What was read before the pause but not decoded yet goes first, on a fresh turn
          // (resume is called from inside the queue's write path). The socket is read again only
          // once that input is decoded: a peer that reads its replies slowly would otherwise make
          // the held input grow at every pause and resume.
          setImmediate(() => this.feedPending());
        },
      },
      onWriteFailed: (cause) => this.failConnection(cause),
    });
    this.decoder = new NettyMessageDecoder({
      side: "server",
      maxFrameSize: options.maxFrameSize,
      onMessage: (message) => this.handle(message),
    });
    connection.setHandler(this);
    this.armWatchdog(this.watchdogPeriod());
  }

  onData(chunk: Buffer): void {
    if (this.closed) return;
    this.lastActivityAt = performance.now();
    if (this.pendingInput.length > 0 || this.queue.isReadingPaused()) {
      // A transport may still deliver what it had already read when it was paused.
      this.pendingInput.push(chunk);
      return;
    }
    this.feed(chunk);
  }

  /** Decodes `chunk` slice by slice; keeps the rest once the outbound budget pauses reading. */
  private feed(chunk: Buffer): void {
    try {
      for (let at = 0; at < chunk.length; at += DECODE_SLICE_BYTES) {
        if (this.closed) return;
        if (this.queue.isReadingPaused()) {
          // Back to the front: `chunk` is the oldest input not decoded yet.
          this.pendingInput.unshift(chunk.subarray(at));
          return;
        }
        this.decoder.feed(chunk.subarray(at, at + DECODE_SLICE_BYTES));
      }
    } catch (error) {
      this.failConnection(error as Error);
      return;
    }
    if (this.frameStartedAt < 0 && !this.decoder.isAtFrameBoundary()) {
      this.frameStartedAt = performance.now();
    }
  }

  private feedPending(): void {
    while (this.pendingInput.length > 0 && !this.closed && !this.queue.isReadingPaused()) {
      this.feed(this.pendingInput.shift() as Buffer);
    }
    if (this.pendingInput.length === 0 && !this.closed && !this.queue.isReadingPaused()) {
      this.connection.resume();
    }
  }

  onDrain(): void {
    this.queue.onDrain();
  }

  /** The transport saw a violation of its framing: answered like one the decoder finds. */
  onProtocolViolation(error: Error): void {
    this.failConnection(error);
  }

  onClose(): void {
    this.watchdog?.clear();
    this.closed = true;
    this.pendingInput = [];
    this.decoder.destroy();
    this.queue.releaseAllResources();
    this.options.onClosed?.(this);
  }

  /** Number of readers (open partition requests) on this connection. */
  getNumberOfReaders(): number {
    return this.queue.getNumberOfReaders();
  }

  /** Bytes queued for the peer and not yet handed to the transport's socket. */
  getQueuedOutboundBytes(): number {
    return this.queue.getQueuedOutboundBytes();
  }

  /** Resolves once every write to this peer has called back (see PartitionRequestQueue). */
  whenWritesDone(): Promise<void> {
    return this.queue.whenWritesDone();
  }

  /** Bytes read from this peer and not decoded yet (held while reading from it is paused). */
  getHeldInputBytes(): number {
    let held = 0;
    for (const chunk of this.pendingInput) held += chunk.length;
    return held;
  }

  /** Whether the server stopped reading from this peer because it does not read its replies. */
  isReadingPaused(): boolean {
    return this.queue.isReadingPaused();
  }

  /**
   * Refuses the connection: a fatal ErrorResponse carrying `cause` (e.g. a limit of the data
   * server), then a graceful close. Idempotent.
   */
  refuse(cause: Error): void {
    this.failConnection(cause);
  }

  private handle(message: NettyMessage): void {
    this.frameStartedAt = -1;
    switch (message.id) {
      case MessageId.PARTITION_REQUEST: {
        if (this.queue.getNumberOfReaders() >= this.options.maxPartitionRequestsPerConnection) {
          throw new ProtocolError(
            `more than ${this.options.maxPartitionRequestsPerConnection} concurrent partition requests on one connection ` +
              "('taskmanager.network.max-partition-requests-per-connection')",
          );
        }
        if (this.queue.getReader(message.receiverId) !== undefined) {
          throw new ProtocolError(`duplicate PartitionRequest for receiver ${message.receiverId}`);
        }
        const { start, end } = message.subpartitionIndexSet;
        if (start !== end) {
          // A well-formed request this server does not serve (Flink 1.19+ can union a range in
          // one view; Sluice's consumers use one channel per subpartition): only that channel
          // fails, with a reason.
          this.queue.sendError(
            new IllegalArgumentError(
              `PartitionRequest for receiver ${message.receiverId}: subpartition range [${start}, ${end}] ` +
                "is not served by this data server; request one subpartition per channel",
            ),
            message.receiverId,
          );
          return;
        }
        const reader = new CreditBasedSequenceNumberingViewReader(
          message.receiverId,
          message.credit,
          this.queue,
        );
        this.queue.notifyReaderCreated(reader);
        try {
          reader.requestSubpartitionViewOrRegisterListener(
            this.partitionManager,
            message.partitionId,
            start,
            this.options.partitionRequestTimeoutMs,
          );
        } catch (error) {
          this.queue.notifyReaderFailed(reader, error as Error);
        }
        return;
      }
      case MessageId.TASK_EVENT_REQUEST: {
        const event = EventSerializer.fromSerializedEvent(message.event);
        const delivered =
          event instanceof TaskEvent &&
          this.taskEventPublisher?.publish(message.partitionId, event) === true;
        if (!delivered) {
          this.queue.sendError(
            new IllegalStateError(`no task event listener for ${message.partitionId}`),
            message.receiverId,
          );
        }
        return;
      }
      case MessageId.CANCEL_PARTITION_REQUEST:
        this.queue.cancel(message.receiverId);
        return;
      case MessageId.CLOSE_REQUEST:
        this.queue.releaseAllResources();
        this.connection.close();
        return;
      case MessageId.ADD_CREDIT:
        if (
          !this.queue.addCreditOrResumeConsumption(message.receiverId, (r) =>
            r.addCredit(message.credit),
          )
        ) {
          throw this.noReader("AddCredit", message.receiverId);
        }
        return;
      case MessageId.RESUME_CONSUMPTION:
        if (
          !this.queue.addCreditOrResumeConsumption(message.receiverId, (r) => r.resumeConsumption())
        ) {
          throw this.noReader("ResumeConsumption", message.receiverId);
        }
        return;
      case MessageId.ACK_ALL_USER_RECORDS_PROCESSED: {
        const reader = this.queue.getReader(message.receiverId);
        if (reader === undefined) {
          throw this.noReader("AckAllUserRecordsProcessed", message.receiverId);
        }
        reader.acknowledgeAllRecordsProcessed();
        return;
      }
      case MessageId.NEW_BUFFER_SIZE:
        // Ignored when the reader does not exist (yet), as in Flink.
        this.queue.getReader(message.receiverId)?.notifyNewBufferSize(message.bufferSize);
        return;
      default:
        // SegmentId (tiered storage) has no meaning for pipelined partitions.
        return;
    }
  }

  /**
   * Flink raises an error for credit, resume or acknowledgement of a receiver the connection
   * has no reader for: a correct client only sends them for requests it made and has not
   * cancelled, so anything else is a broken or hostile peer.
   */
  private noReader(what: string, receiverId: unknown): ProtocolError {
    return new ProtocolError(
      `${what} for receiver ${receiverId}, which has no partition request on this connection`,
    );
  }

  // ------------------------------------------------------------------------ timeouts

  /** How often the watchdog looks when nothing is due sooner. */
  private watchdogPeriod(): number | undefined {
    const { idleTimeoutMs, frameReadTimeoutMs } = this.options;
    if (idleTimeoutMs === undefined) return frameReadTimeoutMs;
    if (frameReadTimeoutMs === undefined) return idleTimeoutMs;
    return Math.min(idleTimeoutMs, frameReadTimeoutMs);
  }

  private armWatchdog(delayMs: number | undefined): void {
    if (delayMs === undefined || this.closed) return;
    this.watchdog?.clear();
    // Judged in the check phase, after the poll phase read what the peer sent during a stall of
    // this event loop: bytes that arrived in time count.
    this.watchdog = deadlineAfterPoll(delayMs, () => this.checkTimeouts());
  }

  private checkTimeouts(): void {
    if (this.closed) return;
    const { idleTimeoutMs, frameReadTimeoutMs } = this.options;
    const now = performance.now();
    let next = this.watchdogPeriod();
    if (frameReadTimeoutMs !== undefined && this.frameStartedAt >= 0) {
      if (this.queue.isReadingPaused()) {
        // We stopped reading, not the peer: its frame gets the full time once we read again.
        this.frameStartedAt = now;
      } else if (now - this.frameStartedAt >= frameReadTimeoutMs) {
        this.failConnection(
          new TimeoutError(
            `a frame from ${this.connection.remoteAddress} started ${Math.round(now - this.frameStartedAt)} ms ago ` +
              `and is still incomplete (limit ${frameReadTimeoutMs} ms, 'taskmanager.network.frame-read-timeout'); connection closed`,
          ),
        );
        return;
      } else {
        next = Math.min(next ?? frameReadTimeoutMs, this.frameStartedAt + frameReadTimeoutMs - now);
      }
    }
    if (idleTimeoutMs !== undefined) {
      if (
        this.queue.getNumberOfReaders() > 0 ||
        this.queue.isReadingPaused() ||
        this.pendingInput.length > 0
      ) {
        // Not idle: it serves channels (waiting for its consumers), or it sent requests that
        // wait until it reads its replies (bounded by the outbound budget).
        this.lastActivityAt = now;
      } else if (now - this.lastActivityAt >= idleTimeoutMs) {
        this.failConnection(
          new TimeoutError(
            `connection from ${this.connection.remoteAddress} had no partition request and sent nothing for ` +
              `${idleTimeoutMs} ms ('taskmanager.network.idle-connection-timeout'); connection closed`,
          ),
        );
        return;
      } else {
        next = Math.min(next ?? idleTimeoutMs, this.lastActivityAt + idleTimeoutMs - now);
      }
    }
    this.armWatchdog(next);
  }

  private failConnection(cause: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.watchdog?.clear();
    const error = isSluiceError(cause)
      ? cause
      : new CancelledError(`server handler failed: ${cause.message}`, { cause });
    // Fatal (no receiver): the client fails every channel of this connection.
    this.connection.write([encodeMessage(errorToErrorResponse(error))]);
    this.queue.releaseAllResources();
    this.decoder.destroy();
    this.pendingInput = [];
    this.connection.close();
  }
}
