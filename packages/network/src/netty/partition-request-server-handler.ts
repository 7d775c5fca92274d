import {
  CancelledError,
  EventSerializer,
  IllegalStateError,
  isSluiceError,
  ProtocolError,
  TaskEvent,
} from "@sluice/core";
import type { TaskEventPublisher } from "@sluice/runtime-api";
import type { ResultPartitionManager } from "../partition/result-partition-manager.js";
import { errorToErrorResponse } from "../protocol/error-response.js";
import { encodeMessage } from "../protocol/message-encoder.js";
import { MessageId } from "../protocol/message-id.js";
import type { NettyMessage } from "../protocol/netty-message.js";
import { NettyMessageDecoder } from "../protocol/netty-message-decoder.js";
import { CreditBasedSequenceNumberingViewReader } from "./credit-based-sequence-numbering-view-reader.js";
import { PartitionRequestQueue } from "./partition-request-queue.js";
import type { ConnectionHandler, TransportConnection } from "./transport.js";

/** Server-side limits and timeouts. */
export interface ServerHandlerOptions {
  readonly maxFrameSize: number;
  readonly partitionRequestTimeoutMs: number;
  /** PartitionRequests one connection may have open at once. */
  readonly maxPartitionRequestsPerConnection: number;
  /** Called once when the connection is gone and every reader was released. */
  readonly onClosed?: (handler: PartitionRequestServerHandler) => void;
}

/**
 * Serves one client connection of the data server (Flink's PartitionRequestServerHandler plus
 * its PartitionRequestQueue): decodes requests, creates credit-based readers, applies credit and
 * resume messages, and releases every reader when the connection ends. A protocol violation
 * answers with a fatal ErrorResponse and closes the connection; other connections are unaffected.
 */
export class PartitionRequestServerHandler implements ConnectionHandler {
  private readonly connection: TransportConnection;
  private readonly partitionManager: ResultPartitionManager;
  private readonly taskEventPublisher: TaskEventPublisher | undefined;
  private readonly options: ServerHandlerOptions;
  private readonly decoder: NettyMessageDecoder;
  private readonly queue: PartitionRequestQueue;
  private closed = false;

  constructor(
    connection: TransportConnection,
    partitionManager: ResultPartitionManager,
    taskEventPublisher: TaskEventPublisher | undefined,
    options: ServerHandlerOptions,
  ) {
    this.connection = connection;
    this.partitionManager = partitionManager;
    this.taskEventPublisher = taskEventPublisher;
    this.options = options;
    this.queue = new PartitionRequestQueue(connection);
    this.decoder = new NettyMessageDecoder({
      side: "server",
      maxFrameSize: options.maxFrameSize,
      onMessage: (message) => this.handle(message),
    });
    connection.setHandler(this);
  }

  onData(chunk: Buffer): void {
    if (this.closed) return;
    try {
      this.decoder.feed(chunk);
    } catch (error) {
      this.failConnection(error as Error);
    }
  }

  onDrain(): void {
    this.queue.onDrain();
  }

  onClose(): void {
    this.closed = true;
    this.decoder.destroy();
    this.queue.releaseAllResources();
    this.options.onClosed?.(this);
  }

  /** Number of readers (open partition requests) on this connection. */
  getNumberOfReaders(): number {
    return this.queue.getNumberOfReaders();
  }

  private handle(message: NettyMessage): void {
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
          throw new ProtocolError(
            `PartitionRequest for receiver ${message.receiverId}: subpartition ranges [${start}, ${end}] are not supported; request one subpartition per channel`,
          );
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
          this.connection.write([
            encodeMessage(
              errorToErrorResponse(
                new IllegalStateError(`no task event listener for ${message.partitionId}`),
                message.receiverId,
              ),
            ),
          ]);
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
        this.queue.addCreditOrResumeConsumption(message.receiverId, (r) =>
          r.addCredit(message.credit),
        );
        return;
      case MessageId.RESUME_CONSUMPTION:
        this.queue.addCreditOrResumeConsumption(message.receiverId, (r) => r.resumeConsumption());
        return;
      case MessageId.ACK_ALL_USER_RECORDS_PROCESSED:
        this.queue.getReader(message.receiverId)?.acknowledgeAllRecordsProcessed();
        return;
      case MessageId.NEW_BUFFER_SIZE:
        // Ignored when the reader does not exist (yet), as in Flink.
        this.queue.getReader(message.receiverId)?.notifyNewBufferSize(message.bufferSize);
        return;
      default:
        // SegmentId (tiered storage) has no meaning for pipelined partitions.
        return;
    }
  }

  private failConnection(cause: Error): void {
    if (this.closed) return;
    this.closed = true;
    const error = isSluiceError(cause)
      ? cause
      : new CancelledError(`server handler failed: ${cause.message}`, { cause });
    // Fatal (no receiver): the client fails every channel of this connection.
    this.connection.write([encodeMessage(errorToErrorResponse(error))]);
    this.queue.releaseAllResources();
    this.decoder.destroy();
    this.connection.close();
  }
}
