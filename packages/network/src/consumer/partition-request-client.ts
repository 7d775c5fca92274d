import type { ResultPartitionID, TaskEvent } from "@sluice/core";
import type { RemoteInputChannel } from "./remote-input-channel.js";

/**
 * What a {@link RemoteInputChannel} asks of the connection to its producer's data server
 * (Flink's PartitionRequestClient interface). The consumer side knows only this; the
 * credit-based client in `netty/client/` implements it, so the dependency points from the
 * connection code to the channels and never back.
 *
 * Every method may be called from any point of the channel's life up to `close`; a client whose
 * connection is gone fails the channel through {@link RemoteInputChannel.onError} instead of
 * throwing.
 */
export interface PartitionRequestClient {
  /** Sends the channel's PartitionRequest, announcing its initial credit, and routes responses to it. */
  requestSubpartition(channel: RemoteInputChannel): void;
  /** Sends the channel's PartitionRequest again (after PartitionNotFound and a backoff). */
  retriggerSubpartitionRequest(channel: RemoteInputChannel): void;
  /**
   * The channel has unannounced credit: an AddCredit follows, carrying whatever
   * {@link RemoteInputChannel.getAndResetUnannouncedCredit} returns when it is written.
   */
  notifyCreditAvailable(channel: RemoteInputChannel): void;
  /** Resumes the channel's subpartition after an aligned barrier blocked it. */
  resumeConsumption(channel: RemoteInputChannel): void;
  /**
   * Tells the producer that the channel's task processed every record of its subpartition
   * (AckAllUserRecordsProcessed), once it read the EndOfData.
   */
  acknowledgeAllRecordsProcessed(channel: RemoteInputChannel): void;
  /** Buffer debloating: tells the producer the channel's new buffer size. */
  notifyNewBufferSize(channel: RemoteInputChannel, bufferSize: number): void;
  /** Sends a task event to the producer of `partitionId` on behalf of the channel. */
  sendTaskEvent(
    partitionId: ResultPartitionID,
    event: TaskEvent,
    channel: RemoteInputChannel,
  ): void;
  /** The channel is released: cancels its request; the connection closes once no channel uses it. */
  close(channel: RemoteInputChannel): void;
  /**
   * True once the connection was closed because its last channel left: a channel that gets a
   * closed client asks its `ConnectionManager` again for a fresh one.
   */
  isClosed(): boolean;
}
