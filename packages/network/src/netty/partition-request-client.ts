import {
  EventSerializer,
  RemoteTransportError,
  type ResultPartitionID,
  type TaskEvent,
} from "@sluice/core";
import type { RemoteInputChannel } from "../consumer/remote-input-channel.js";
import { MessageId } from "../protocol/message-id.js";
import type { CreditBasedPartitionRequestClientHandler } from "./credit-based-partition-request-client-handler.js";

/**
 * The per-connection client the channels talk to (Flink's NettyPartitionRequestClient). It
 * counts the channels using the connection and closes it when the last one leaves.
 */
export class PartitionRequestClient {
  private readonly handler: CreditBasedPartitionRequestClientHandler;
  private readonly onUnused: (client: PartitionRequestClient) => void;
  private users = 0;
  private closed = false;

  constructor(
    handler: CreditBasedPartitionRequestClientHandler,
    onUnused: (client: PartitionRequestClient) => void,
  ) {
    this.handler = handler;
    this.onUnused = onUnused;
  }

  /** Sends the PartitionRequest with the channel's initial credit. */
  requestSubpartition(channel: RemoteInputChannel): void {
    if (this.closed) {
      channel.onError(
        new RemoteTransportError(
          `connection ${this.handler.connectionId} was closed before the request`,
        ),
      );
      return;
    }
    this.users++;
    this.handler.addInputChannel(channel);
    this.writePartitionRequest(channel);
  }

  private writePartitionRequest(channel: RemoteInputChannel): void {
    this.handler.writeNow({
      id: MessageId.PARTITION_REQUEST,
      partitionId: channel.partitionId,
      subpartitionIndexSet: { start: channel.subpartitionIndex, end: channel.subpartitionIndex },
      receiverId: channel.id,
      credit: channel.initialCredit,
    });
  }

  /** Sends the channel's PartitionRequest again (after PartitionNotFound and a backoff). */
  retriggerSubpartitionRequest(channel: RemoteInputChannel): void {
    if (this.closed) {
      channel.onError(
        new RemoteTransportError(
          `connection ${this.handler.connectionId} was closed before the retry`,
        ),
      );
      return;
    }
    this.writePartitionRequest(channel);
  }

  /** Announces the channel's accumulated credit (read when the message is written). */
  notifyCreditAvailable(channel: RemoteInputChannel): void {
    this.handler.enqueue(() => {
      if (channel.isReleased()) return undefined;
      const credit = channel.getAndResetUnannouncedCredit();
      return credit > 0 ? { id: MessageId.ADD_CREDIT, credit, receiverId: channel.id } : undefined;
    });
  }

  resumeConsumption(channel: RemoteInputChannel): void {
    this.handler.enqueue(() =>
      channel.isReleased()
        ? undefined
        : { id: MessageId.RESUME_CONSUMPTION, receiverId: channel.id },
    );
  }

  /** Buffer debloating: the channel's new buffer size, sent as NewBufferSize. */
  notifyNewBufferSize(channel: RemoteInputChannel, bufferSize: number): void {
    this.handler.enqueue(() =>
      channel.isReleased()
        ? undefined
        : { id: MessageId.NEW_BUFFER_SIZE, bufferSize, receiverId: channel.id },
    );
  }

  sendTaskEvent(
    partitionId: ResultPartitionID,
    event: TaskEvent,
    channel: RemoteInputChannel,
  ): void {
    this.handler.writeNow({
      id: MessageId.TASK_EVENT_REQUEST,
      event: EventSerializer.toSerializedEvent(event),
      partitionId,
      receiverId: channel.id,
    });
  }

  /** The channel is done (released): cancel its request; close the connection when unused. */
  close(channel: RemoteInputChannel): void {
    this.handler.removeInputChannel(channel);
    this.handler.writeNow({ id: MessageId.CANCEL_PARTITION_REQUEST, receiverId: channel.id });
    this.users--;
    if (this.users <= 0 && !this.closed) {
      this.closed = true;
      this.onUnused(this);
    }
  }

  isClosed(): boolean {
    return this.closed;
  }
}
