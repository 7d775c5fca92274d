import {
  EventSerializer,
  RemoteTransportError,
  type ResultPartitionID,
  type TaskEvent,
} from "@sluice/core";
import type { PartitionRequestClient } from "../../consumer/partition-request-client.js";
import type { RemoteInputChannel } from "../../consumer/remote-input-channel.js";
import { MessageId } from "../../protocol/message-id.js";
import type { CreditBasedPartitionRequestClientHandler } from "./credit-based-partition-request-client-handler.js";

/**
 * The per-connection client the channels talk to (Flink's NettyPartitionRequestClient). It
 * counts the channels using the connection. When the last one leaves it closes the connection
 * at once, or — reused across jobs — after `keepIdleMs` without a new channel, so that the next
 * job's channels to the same worker skip the connect (FLINK-15455).
 */
export class NettyPartitionRequestClient implements PartitionRequestClient {
  private readonly handler: CreditBasedPartitionRequestClientHandler;
  private readonly onUnused: (client: NettyPartitionRequestClient) => void;
  private readonly keepIdleMs: number;
  private idleTimer: NodeJS.Timeout | undefined;
  private users = 0;
  private closed = false;

  /**
   * @param keepIdleMs how long an unused connection stays open for the next channel; 0 closes
   *   it as soon as its last channel leaves.
   */
  constructor(
    handler: CreditBasedPartitionRequestClientHandler,
    onUnused: (client: NettyPartitionRequestClient) => void,
    keepIdleMs = 0,
  ) {
    this.handler = handler;
    this.onUnused = onUnused;
    this.keepIdleMs = keepIdleMs;
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
    this.cancelIdleTimer();
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

  acknowledgeAllRecordsProcessed(channel: RemoteInputChannel): void {
    this.handler.enqueue(() =>
      channel.isReleased()
        ? undefined
        : { id: MessageId.ACK_ALL_USER_RECORDS_PROCESSED, receiverId: channel.id },
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
    if (this.users > 0 || this.closed) return;
    if (this.keepIdleMs <= 0) {
      this.closeUnused();
      return;
    }
    this.cancelIdleTimer();
    this.idleTimer = setTimeout(() => this.closeUnused(), this.keepIdleMs);
    // An idle connection kept for a next job must not keep the process alive.
    this.idleTimer.unref();
  }

  private closeUnused(): void {
    this.idleTimer = undefined;
    if (this.users > 0 || this.closed) return;
    this.closed = true;
    this.onUnused(this);
  }

  /** Stops waiting to close an idle connection (a channel came, or the connection is gone). */
  cancelIdleTimer(): void {
    if (this.idleTimer === undefined) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  isClosed(): boolean {
    return this.closed;
  }
}
