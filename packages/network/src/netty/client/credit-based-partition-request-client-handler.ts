import {
  isSluiceError,
  LocalTransportError,
  type NetworkBuffer,
  RemoteTransportError,
} from "@sluice/core";
import type { ConnectionID } from "../../consumer/connection-id.js";
import type { RemoteInputChannel } from "../../consumer/remote-input-channel.js";
import { errorFromErrorResponse, isFatalErrorResponse } from "../../protocol/error-response.js";
import { encodeMessage } from "../../protocol/message-encoder.js";
import { MessageId } from "../../protocol/message-id.js";
import type { NettyMessage, NonBufferMessage } from "../../protocol/netty-message.js";
import { NettyMessageDecoder } from "../../protocol/netty-message-decoder.js";
import type { ConnectionHandler, TransportConnection } from "../transport/transport.js";

/**
 * The client side of one connection (Flink's CreditBasedPartitionRequestClientHandler): routes
 * responses to the RemoteInputChannels by receiver id, decodes data straight into the channel's
 * credited buffers, and sends the channels' outbound messages (AddCredit, ResumeConsumption, …)
 * through one FIFO. Credit announcements are taken at write time, so several increments that
 * arrive before the write coalesce into one AddCredit.
 */
export class CreditBasedPartitionRequestClientHandler implements ConnectionHandler {
  readonly connectionId: ConnectionID;
  private readonly connection: TransportConnection;
  private readonly channels = new Map<string, RemoteInputChannel>();
  private readonly decoder: NettyMessageDecoder;
  private readonly outbound: (() => NonBufferMessage | undefined)[] = [];
  private flushScheduled = false;
  private failure: Error | undefined;
  private readonly onClosed: (handler: CreditBasedPartitionRequestClientHandler) => void;

  constructor(
    connectionId: ConnectionID,
    connection: TransportConnection,
    maxFrameSize: number,
    onClosed: (handler: CreditBasedPartitionRequestClientHandler) => void,
  ) {
    this.connectionId = connectionId;
    this.connection = connection;
    this.onClosed = onClosed;
    this.decoder = new NettyMessageDecoder({
      side: "client",
      maxFrameSize,
      allocator: {
        allocateDataBuffer: (receiverId, _size) =>
          this.channels.get(receiverId.toString())?.requestBuffer(),
        onSkipped: (receiverId) => {
          const channel = this.channels.get(receiverId.toString());
          if (channel !== undefined && !channel.isReleased()) {
            // A data buffer arrived without credit: the sender broke the protocol for this channel.
            channel.onError(
              new RemoteTransportError(
                `${channel} received a buffer from ${connectionId.address} without available credit`,
              ),
            );
          }
          this.writeNow({ id: MessageId.CANCEL_PARTITION_REQUEST, receiverId });
        },
      },
      onMessage: (message) => this.handle(message),
    });
    connection.setHandler(this);
  }

  addInputChannel(channel: RemoteInputChannel): void {
    if (this.failure !== undefined) {
      channel.onError(this.failure);
      return;
    }
    this.channels.set(channel.id.toString(), channel);
  }

  removeInputChannel(channel: RemoteInputChannel): void {
    this.channels.delete(channel.id.toString());
  }

  getNumberOfChannels(): number {
    return this.channels.size;
  }

  hasFailed(): boolean {
    return this.failure !== undefined;
  }

  /** Queues a message produced at write time (AddCredit reads the credit then). */
  enqueue(produce: () => NonBufferMessage | undefined): void {
    this.outbound.push(produce);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // One write per event-loop turn for all queued messages: coalesces credit announcements.
    setImmediate(() => this.flushOutbound());
  }

  /** Writes a message immediately (requests, cancels). */
  writeNow(message: NonBufferMessage): void {
    if (this.failure !== undefined) return;
    this.connection.write([encodeMessage(message)]);
  }

  private flushOutbound(): void {
    this.flushScheduled = false;
    if (this.failure !== undefined) {
      this.outbound.length = 0;
      return;
    }
    const frames: Buffer[] = [];
    for (const produce of this.outbound.splice(0)) {
      const message = produce();
      if (message !== undefined) frames.push(encodeMessage(message));
    }
    if (frames.length > 0) this.connection.write(frames);
  }

  onData(chunk: Buffer): void {
    if (this.failure !== undefined) return;
    try {
      this.decoder.feed(chunk);
    } catch (error) {
      const cause = isSluiceError(error)
        ? error
        : new LocalTransportError(`decoding data from ${this.connectionId.address} failed`, {
            cause: error,
          });
      this.failAll(cause);
      this.connection.destroy(cause);
    }
  }

  onDrain(): void {}

  /** The producer broke the transport's framing: every channel fails with the violation. */
  onProtocolViolation(error: Error): void {
    this.failAll(error);
    this.connection.destroy(error);
  }

  onClose(cause: Error | undefined): void {
    this.failAll(
      new RemoteTransportError(
        `connection to ${this.connectionId.address} closed${cause ? `: ${cause.message}` : " by the remote"}; ` +
          "the producer's worker may have died",
        { cause },
      ),
    );
    this.decoder.destroy();
    this.onClosed(this);
  }

  private handle(message: NettyMessage): void {
    switch (message.id) {
      case MessageId.BUFFER_RESPONSE: {
        const channel = this.channels.get(message.receiverId.toString());
        const buffer: NetworkBuffer | undefined = message.buffer;
        if (channel === undefined) {
          buffer?.recycleBuffer();
          // An event or empty buffer for a channel that went away: cancel its request.
          this.writeNow({ id: MessageId.CANCEL_PARTITION_REQUEST, receiverId: message.receiverId });
          return;
        }
        channel.onBuffer(buffer, message.sequenceNumber, message.backlog);
        return;
      }
      case MessageId.ERROR_RESPONSE: {
        const error = errorFromErrorResponse(message);
        if (isFatalErrorResponse(message)) {
          this.failAll(
            new RemoteTransportError(
              `fatal error from ${this.connectionId.address}: ${error.message}`,
              { cause: error },
            ),
          );
          this.connection.destroy(error);
          return;
        }
        const channel =
          message.receiverId === undefined
            ? undefined
            : this.channels.get(message.receiverId.toString());
        channel?.onError(error);
        return;
      }
      case MessageId.BACKLOG_ANNOUNCEMENT:
        this.channels.get(message.receiverId.toString())?.onSenderBacklog(message.backlog);
        return;
      default:
        return;
    }
  }

  private failAll(cause: Error): void {
    if (this.failure !== undefined) return;
    this.failure = cause;
    for (const channel of this.channels.values()) channel.onError(cause);
    this.channels.clear();
    this.outbound.length = 0;
  }

  /**
   * Closes the connection (no channel uses it any more). A buffer the decoder was filling belongs
   * to a channel that is gone: it goes back now, not when the remote finally closes its side, and
   * whatever still arrives is dropped.
   */
  close(): void {
    this.failure ??= new RemoteTransportError(`connection to ${this.connectionId.address} closed`);
    this.decoder.destroy();
    this.connection.close();
  }
}
