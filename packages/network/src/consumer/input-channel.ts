import {
  CancelledError,
  ErrorCodes,
  isSluiceError,
  type NetworkBuffer,
  ProducerFailedError,
  type ResultPartitionID,
  type TaskEvent,
} from "@sluice/core";

/** What the gate gets from a channel (Flink's InputChannel.BufferAndAvailability). */
export interface BufferAndAvailability {
  /** One reference owned by the caller. */
  readonly buffer: NetworkBuffer;
  /** Whether the channel has another buffer right away. */
  readonly moreAvailable: boolean;
  /** The channel's sequence number of this buffer. */
  readonly sequenceNumber: number;
}

/** The owner of a channel: the gate, told when the channel gets data or fails. */
export interface InputChannelOwner {
  readonly owningTaskName: string;
  notifyChannelNonEmpty(channel: InputChannel): void;
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
  private readonly backoff: Backoff;
  private currentBackoffMs = 0;
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
  }

  /** Asks the producer for the subpartition (once; retries are internal). */
  abstract requestSubpartitions(): void;
  /** The next buffer or event, or `undefined` when none is there now. Throws the channel's error. */
  abstract getNextBuffer(): BufferAndAvailability | undefined;
  /** Unblocks the upstream subpartition after an aligned barrier. */
  abstract resumeConsumption(): void;
  /** Sends a task event to the producer. */
  abstract sendTaskEvent(event: TaskEvent): void;
  abstract isReleased(): boolean;
  /** Releases every buffer and the upstream view/request. Idempotent. */
  abstract releaseAllResources(): void;

  /** Tells the gate this channel has data (or an error to report). */
  protected notifyChannelNonEmpty(): void {
    this.gate.notifyChannelNonEmpty(this);
  }

  /** Fails the channel; the gate surfaces `cause` on its next poll. The first error wins. */
  setError(cause: Error): void {
    if (this.cause !== undefined) return;
    this.cause = cause;
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

  /** Throws the channel's error, wrapped to say which channel and producer. */
  protected checkError(): void {
    const cause = this.cause;
    if (cause === undefined) return;
    throw cause;
  }

  /** Wraps a producer-side failure so the consumer sees who failed and why. */
  protected producerFailed(cause: Error | undefined): Error {
    // A damaged partition file is the data's fault, not the producer's: keep its own code.
    if (isSluiceError(cause, ErrorCodes.PARTITION_FILE_CORRUPTED)) return cause as Error;
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
