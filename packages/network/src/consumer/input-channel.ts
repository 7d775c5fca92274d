import {
  CancelledError,
  type CheckpointBarrier,
  ErrorCodes,
  isSluiceError,
  type NetworkBuffer,
  ProducerFailedError,
  type ResultPartitionID,
  type TaskEvent,
} from "@sluice/core";
import type {
  ChannelStateWriter,
  InputChannelInfo,
  ResultPartitionType,
} from "@sluice/runtime-api";
import { ChannelStatePersister } from "./channel-state-persister.js";
import { classifyPartitionFailure } from "./partition-failure.js";

/** What the gate gets from a channel (Flink's InputChannel.BufferAndAvailability). */
export interface BufferAndAvailability {
  /** One reference owned by the caller. */
  readonly buffer: NetworkBuffer;
  /** Whether the channel has another buffer right away. */
  readonly moreAvailable: boolean;
  /** The channel's sequence number of this buffer. */
  readonly sequenceNumber: number;
  /** Whether the channel's next buffer is a priority event (it should be read first). */
  readonly morePriorityEvents?: boolean;
}

/** The owner of a channel: the gate, told when the channel gets data or fails. */
export interface InputChannelOwner {
  readonly owningTaskName: string;
  /** The gate's position among the task's gates (names the channel in channel state). */
  readonly gateIndex?: number;
  /**
   * The type of the partitions the gate reads: a channel that loses the connection to the
   * producer of a blocking partition fails with a PartitionConnectionError naming it.
   */
  readonly consumedPartitionType?: ResultPartitionType;
  notifyChannelNonEmpty(channel: InputChannel): void;
  /**
   * A priority event (an unaligned barrier, an announcement) went to the head of `channel`'s
   * queue: the gate serves the channel before the others.
   */
  notifyPriorityEvent?(channel: InputChannel, prioritySequenceNumber: number): void;
}

/** Exponential backoff settings for partition requests. */
export interface Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

/**
 * One input of a gate: reads one subpartition range of one producer (Flink's InputChannel).
 * Subclasses: LocalInputChannel (same process), RemoteInputChannel (over a transport),
 * UnknownInputChannel (producer location not known yet).
 */
export abstract class InputChannel {
  readonly channelIndex: number;
  readonly partitionId: ResultPartitionID;
  readonly subpartitionIndex: number;
  protected readonly gate: InputChannelOwner;
  /** The channel's name in channel state: its gate's index and its own. */
  readonly channelInfo: InputChannelInfo;
  /** The in-flight data of unaligned checkpoints. */
  protected readonly channelStatePersister: ChannelStatePersister;
  /** The partition request backoff (`taskmanager.network.request-backoff.*`). */
  protected readonly backoff: Backoff;
  /** The backoff used so far; what it counts differs by channel (see `increaseBackoff`). */
  protected currentBackoffMs = 0;
  /** Partition requests retried after PartitionNotFound (the partition was not registered yet). */
  private partitionRequestRetries = 0;
  private cause: Error | undefined;

  protected constructor(
    gate: InputChannelOwner,
    channelIndex: number,
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    backoff: Backoff,
  ) {
    this.gate = gate;
    this.channelIndex = channelIndex;
    this.partitionId = partitionId;
    this.subpartitionIndex = subpartitionIndex;
    this.backoff = backoff;
    this.channelInfo = { gateIndex: gate.gateIndex ?? 0, channelIndex };
    this.channelStatePersister = new ChannelStatePersister(this.channelInfo);
  }

  /** Asks the producer for the subpartition (once; retries are internal). */
  abstract requestSubpartitions(): void;
  /** The next buffer or event, or `undefined` when none is there now. Throws the channel's error. */
  abstract getNextBuffer(): BufferAndAvailability | undefined;
  /** Unblocks the upstream subpartition after an aligned barrier. */
  abstract resumeConsumption(): void;
  /**
   * The task read this channel's EndOfData and processed every record before it: tells the
   * producer's subpartition (Flink's `acknowledgeAllRecordsProcessed`, AckAllUserRecordsProcessed
   * on the wire), whose task waits for it before it finishes.
   */
  abstract acknowledgeAllRecordsProcessed(): void;
  /** Sends a task event to the producer. */
  abstract sendTaskEvent(event: TaskEvent): void;
  abstract isReleased(): boolean;
  /** Releases every buffer and the upstream view/request. Idempotent. */
  abstract releaseAllResources(): void;

  // ------------------------------------------------------------ unaligned checkpoints, debloating

  /** Where in-flight data of unaligned checkpoints goes (set by the gate). */
  setChannelStateWriter(writer: ChannelStateWriter): void {
    this.channelStatePersister.setWriter(writer);
  }

  /**
   * Unaligned checkpoint `barrier` started at the task: hand the writer what this channel holds
   * before the barrier and persist what arrives until it (Flink's `checkpointStarted`). A
   * channel that holds no data of its own only starts persisting.
   */
  checkpointStarted(barrier: CheckpointBarrier): void {
    this.channelStatePersister.startPersisting(barrier.id, []);
  }

  /** The checkpoint completed or was aborted at the task: stop persisting. */
  checkpointStopped(checkpointId: bigint): void {
    this.channelStatePersister.stopPersisting(checkpointId);
  }

  /**
   * Moves the announced barrier with `sequenceNumber` ahead of the queued data (only channels
   * that announce barriers, i.e. remote ones, have anything to move).
   */
  convertToPriorityEvent(_sequenceNumber: number): void {}

  /** Buffer debloating: asks the producer for buffers of `newBufferSize` bytes (NewBufferSize). */
  announceBufferSize(_newBufferSize: number): void {}

  /** Buffers holding data for this channel, for buffer debloating (Flink's count). */
  getBuffersInUseCount(): number {
    return 0;
  }

  /** Tells the gate this channel has data (or an error to report). */
  protected notifyChannelNonEmpty(): void {
    this.gate.notifyChannelNonEmpty(this);
  }

  /**
   * Fails the channel; the gate surfaces `cause` on its next poll. The first error wins. A
   * failure to read the partition (not found, connection, corrupt data) names it.
   */
  setError(cause: Error): void {
    if (this.cause !== undefined) return;
    this.cause = this.asPartitionFailure(cause);
    this.notifyChannelNonEmpty();
  }

  getError(): Error | undefined {
    return this.cause;
  }

  /**
   * Buffers waiting in this channel for the gate to take them (Flink's
   * `unsynchronizedGetNumberOfQueuedBuffers`, summed into the task's `inputQueueLength`). 0 for
   * channels that hold none.
   */
  getNumberOfQueuedBuffers(): number {
    return 0;
  }

  /**
   * Bytes of the buffers waiting in this channel (Flink's
   * `unsynchronizedGetSizeOfQueuedBuffers`, summed into the task's `inputQueueSize`). 0 for
   * channels that hold none, and for local channels, which read the producer's queue in place.
   */
  getSizeOfQueuedBuffers(): number {
    return 0;
  }

  /**
   * True for a channel that reads a partition of its own process: its bytes count as
   * `numBytesInLocal`, the others' as `numBytesInRemote`.
   */
  isLocal(): boolean {
    return false;
  }

  /** Throws the channel's error, wrapped to say which channel and producer. */
  protected checkError(): void {
    const cause = this.cause;
    if (cause === undefined) return;
    throw cause;
  }

  /** `cause` classified as a partition exception of this channel's partition where it is one. */
  protected asPartitionFailure(cause: Error): Error {
    return classifyPartitionFailure(
      cause,
      this.partitionId,
      this.gate.consumedPartitionType?.isBlocking === true,
    );
  }

  /** Wraps a producer-side failure so the consumer sees who failed and why. */
  protected producerFailed(cause: Error | undefined): Error {
    // A damaged partition file is the data's fault, not the producer's: keep its own code.
    if (isSluiceError(cause, ErrorCodes.PARTITION_FILE_CORRUPTED)) {
      return this.asPartitionFailure(cause as Error);
    }
    if (cause === undefined || isSluiceError(cause, ErrorCodes.CANCELLED)) {
      // Released without a failure (cancelled), not a producer error.
      return new CancelledError(
        `partition ${this.partitionId} (subpartition ${this.subpartitionIndex}) was released by its producer${cause ? `: ${cause.message}` : ""}`,
        { cause },
      );
    }
    return new ProducerFailedError(
      `producer of ${this.partitionId} (subpartition ${this.subpartitionIndex}) failed: ${cause?.message ?? "released"}`,
      { cause },
    );
  }

  /**
   * After a PartitionNotFound: advances the backoff (see `increaseBackoff`) and counts the retry
   * the caller then schedules. False: give up.
   */
  protected backOffForRetry(): boolean {
    if (!this.increaseBackoff()) return false;
    this.partitionRequestRetries++;
    return true;
  }

  /** Partition requests this channel retried after PartitionNotFound. */
  getPartitionRequestRetries(): number {
    return this.partitionRequestRetries;
  }

  /**
   * Advances the exponential backoff. Returns false once the maximum was used (give up), true
   * when a retry should be scheduled after `getCurrentBackoffMs()`.
   */
  protected increaseBackoff(): boolean {
    if (this.currentBackoffMs === 0) {
      if (this.backoff.initialMs <= 0) return false;
      this.currentBackoffMs = this.backoff.initialMs;
      return true;
    }
    if (this.currentBackoffMs < this.backoff.maxMs) {
      this.currentBackoffMs = Math.min(this.currentBackoffMs * 2, this.backoff.maxMs);
      return true;
    }
    return false;
  }

  getCurrentBackoffMs(): number {
    return this.currentBackoffMs;
  }

  toString(): string {
    return `${this.constructor.name}#${this.channelIndex}[${this.partitionId}:${this.subpartitionIndex}]`;
  }
}
