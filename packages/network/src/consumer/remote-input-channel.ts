import {
  BufferReorderingError,
  CancelledError,
  type CheckpointBarrier,
  ErrorCodes,
  EventAnnouncement,
  EventSerializer,
  hasPriority,
  IllegalStateError,
  InputChannelID,
  isBlockingUpstream,
  isSluiceError,
  type NetworkBuffer,
  type NetworkBufferPool,
  PartitionConnectionError,
  PartitionNotFoundError,
  type ResultPartitionID,
  requiresAnnouncement,
  type TaskEvent,
} from "@sluice/core";
import type { ExecutionState } from "@sluice/runtime-api";
import { nextSequenceNumber, sequenceNumberPrecedes } from "../partition/sequence-number.js";
import { BufferManager, type BufferManagerOwner } from "./buffer-manager.js";
import type { ConnectionID } from "./connection-id.js";
import type { ConnectionManager } from "./connection-manager.js";
import {
  type Backoff,
  type BufferAndAvailability,
  InputChannel,
  type InputChannelOwner,
} from "./input-channel.js";
import type { PartitionRequestClient } from "./partition-request-client.js";

/** The gate as a RemoteInputChannel sees it. */
export interface RemoteChannelGate extends InputChannelOwner {
  getBufferPool(): import("@sluice/core").LocalBufferPool;
  /**
   * Asks the coordinator what the producer of `partitionId` is doing (Flink's producer-state
   * check after PartitionNotFound). Absent: the producer is assumed to be running.
   */
  requestPartitionProducerState?(partitionId: ResultPartitionID): Promise<ExecutionState>;
}

/** Producer states in which a missing partition may still appear: worth asking again. */
const PRODUCING_STATES: ReadonlySet<ExecutionState> = new Set([
  "CREATED",
  "SCHEDULED",
  "DEPLOYING",
  "INITIALIZING",
  "RUNNING",
]);

/** Flink's default of `taskmanager.network.memory.buffers-request-timeout`. */
const DEFAULT_BUFFERS_REQUEST_TIMEOUT_MS = 30_000;

/** Flink's default of `taskmanager.network.partition-request-timeout`. */
const DEFAULT_PARTITION_REQUEST_TIMEOUT_MS = 10_000;

/** Settings of a RemoteInputChannel beyond its identity and buffers. */
export interface RemoteInputChannelOptions {
  /**
   * How long the exclusive buffers may take to come back from other pools
   * (`taskmanager.network.memory.buffers-request-timeout`, default 30 s).
   */
  readonly buffersRequestTimeoutMs?: number;
  /**
   * How long a producer's server keeps a request for a partition not registered yet
   * (`taskmanager.network.partition-request-timeout`, default 10 s): each PartitionNotFound
   * counts this much against the retry budget of 2 × `taskmanager.network.request-backoff.max`.
   * 0 or less: a PartitionNotFound fails the channel at once, as in Flink.
   */
  readonly partitionRequestTimeoutMs?: number;
  /**
   * The sequence number the first buffer from the producer carries (default 0, as in Flink);
   * the producer's views must start at the same one. Tests start near 2³¹ to cross the int32
   * wrap-around.
   */
  readonly initialSequenceNumber?: number;
}

/** A received buffer with its sequence number. */
interface Received {
  readonly buffer: NetworkBuffer;
  readonly sequenceNumber: number;
}

/**
 * An input channel whose producer runs in another process (Flink's RemoteInputChannel), reached
 * through a connection shared with every other channel to the same producer worker.
 *
 * Credit-based flow control: at setup the channel takes `initialCredit` exclusive buffers and
 * announces them in the PartitionRequest; the sender sends a data buffer only against credit.
 * Each response carries the sender's backlog; the channel borrows floating buffers from the gate
 * until it holds backlog + exclusive buffers, and announces new credit with AddCredit — only on
 * the 0 → >0 transition of unannounced credit, so announcements coalesce.
 *
 * Priority: a priority event (an unaligned barrier) goes to the head of the received queue,
 * behind earlier priority events only; a timeoutable aligned barrier stays in its place and an
 * EventAnnouncement of it goes to the head instead, so the task learns of it before it reaches
 * the barrier. Either way the gate is told to serve this channel first.
 */
export class RemoteInputChannel extends InputChannel implements BufferManagerOwner {
  readonly id = new InputChannelID();
  readonly connectionId: ConnectionID;
  private exclusiveBuffers: number;
  private readonly remoteGate: RemoteChannelGate;
  private readonly connectionManager: ConnectionManager;
  private readonly bufferManager: BufferManager;
  private readonly received: Received[] = [];
  /** The first `numPriorityElements` entries of `received` are priority events. */
  private numPriorityElements = 0;
  private client: PartitionRequestClient | undefined;
  /** The sequence number of the next BufferResponse (an int32 that wraps, as Flink's int). */
  private expectedSequenceNumber: number;
  private unannouncedCredit = 0;
  private requested = false;
  private released = false;
  private retriggerTimer: NodeJS.Timeout | undefined;
  private isSetUp = false;
  private readonly buffersRequestTimeoutMs: number;
  private readonly partitionRequestTimeoutMs: number;
  /** When the current partition request was sent (`performance.now()` ms), for the retry budget. */
  private requestSentAt = 0;
  /** Partition requests sent so far (the first and every retry), named when giving up. */
  private partitionRequests = 0;
  /** Set while the exclusive buffers are still on their way back from other pools. */
  private exclusiveBuffersPending: Promise<void> | undefined;
  /** Task events sent before the connection to the producer was there; sent once it is. */
  private pendingTaskEvents: TaskEvent[] = [];

  constructor(
    gate: RemoteChannelGate,
    channelIndex: number,
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    connectionId: ConnectionID,
    connectionManager: ConnectionManager,
    networkBufferPool: NetworkBufferPool,
    initialCredit: number,
    backoff: Backoff,
    options: RemoteInputChannelOptions = {},
  ) {
    super(gate, channelIndex, partitionId, subpartitionIndex, backoff);
    this.buffersRequestTimeoutMs =
      options.buffersRequestTimeoutMs ?? DEFAULT_BUFFERS_REQUEST_TIMEOUT_MS;
    this.partitionRequestTimeoutMs =
      options.partitionRequestTimeoutMs ?? DEFAULT_PARTITION_REQUEST_TIMEOUT_MS;
    this.expectedSequenceNumber = (options.initialSequenceNumber ?? 0) | 0;
    this.remoteGate = gate;
    this.connectionId = connectionId;
    this.connectionManager = connectionManager;
    this.exclusiveBuffers = initialCredit;
    this.bufferManager = new BufferManager(this, networkBufferPool);
  }

  /**
   * The exclusive buffers this channel takes at setup, announced as the initial credit of its
   * partition request; 0 in floating-only mode.
   */
  get initialCredit(): number {
    return this.exclusiveBuffers;
  }

  /**
   * Switches the channel to floating-only mode before its setup (Flink's `buffers-per-channel:
   * 0`): it takes no exclusive buffers and reads with floating buffers of the gate only. The
   * gate does this when the exclusive buffers of its channels cannot be guaranteed.
   *
   * @throws IllegalStateError after setup: the exclusive buffers are already taken.
   */
  useFloatingBuffersOnly(): void {
    if (this.isSetUp) {
      throw new IllegalStateError(`${this}: cannot switch to floating-only mode after setup`);
    }
    this.exclusiveBuffers = 0;
  }

  /**
   * Takes the exclusive buffers (called by the gate's setup). When other pools still hold
   * them, the channel waits up to `taskmanager.network.memory.buffers-request-timeout` for them
   * (as Flink's does) and sends its partition request, which announces them as credit, only
   * once they are here; if they do not come back in time the channel fails with
   * InsufficientBuffersError.
   *
   * @throws InsufficientBuffersError at once when the buffers cannot even be guaranteed.
   */
  setup(): void {
    if (this.isSetUp) return;
    this.isSetUp = true;
    const pending = this.bufferManager.requestExclusiveBuffers(
      this.initialCredit,
      this.remoteGate.getBufferPool(),
      this.buffersRequestTimeoutMs,
    );
    if (pending === undefined) return;
    this.exclusiveBuffersPending = pending.then(
      () => {
        this.exclusiveBuffersPending = undefined;
      },
      (error: Error) => {
        this.exclusiveBuffersPending = undefined;
        if (!this.released) this.setError(error);
      },
    );
  }

  requestSubpartitions(): void {
    if (this.requested) return;
    this.requested = true;
    const pending = this.exclusiveBuffersPending;
    if (pending === undefined) {
      this.connectAndRequest(1);
      return;
    }
    void pending.then(() => {
      if (!this.released && this.getError() === undefined) this.connectAndRequest(1);
    });
  }

  private connectAndRequest(retriesIfClosed: number): void {
    this.connectionManager.createPartitionRequestClient(this.connectionId).then(
      (client) => {
        if (this.released) return;
        if (client.isClosed() && retriesIfClosed > 0) {
          // The shared connection was closed by its last user just before we got it: the
          // factory has forgotten it, so asking again opens a fresh one.
          this.connectAndRequest(retriesIfClosed - 1);
          return;
        }
        this.client = client;
        this.markRequestSent();
        client.requestSubpartition(this);
        const events = this.pendingTaskEvents;
        this.pendingTaskEvents = [];
        for (const event of events) client.sendTaskEvent(this.partitionId, event, this);
      },
      // The factory's error names only the address; the consumer must learn which partition
      // (and so which producer attempt) it cannot reach, as Flink's PartitionConnectionException.
      (error: Error) =>
        this.setError(
          isSluiceError(error, ErrorCodes.PARTITION_CONNECTION)
            ? new PartitionConnectionError(`${this}: ${error.message}`, {
                cause: error,
                partitionId: this.partitionId,
              })
            : error,
        ),
    );
  }

  // ------------------------------------------------------------------ called by the client handler

  /** A data buffer for this channel's next credit, or `undefined` (no credit left: a protocol bug). */
  requestBuffer(): NetworkBuffer | undefined {
    if (this.released) return undefined;
    return this.bufferManager.requestBuffer();
  }

  /** A BufferResponse arrived (buffer filled by the decoder; undefined for an empty buffer). */
  onBuffer(buffer: NetworkBuffer | undefined, sequenceNumber: number, backlog: number): void {
    if (this.released) {
      buffer?.recycleBuffer();
      return;
    }
    if (sequenceNumber !== this.expectedSequenceNumber) {
      buffer?.recycleBuffer();
      this.setError(
        new BufferReorderingError(
          `${this} from ${this.connectionId}: expected sequence number ${this.expectedSequenceNumber}, got ${sequenceNumber}`,
        ),
      );
      return;
    }
    this.expectedSequenceNumber = nextSequenceNumber(sequenceNumber);
    // An empty data buffer (sent only to a channel without exclusive buffers) spent a credit
    // and carries nothing: give back the buffer that credit stood for.
    if (buffer === undefined) this.bufferManager.releaseCreditOfEmptyBuffer();
    if (buffer !== undefined) {
      const wasEmpty = this.received.length === 0;
      const type = buffer.getDataType();
      let firstPriorityEvent = false;
      try {
        if (hasPriority(type)) {
          firstPriorityEvent = this.addPriority({ buffer, sequenceNumber });
        } else {
          this.received.push({ buffer, sequenceNumber });
          if (requiresAnnouncement(type)) {
            firstPriorityEvent = this.addPriority(this.announce(buffer, sequenceNumber));
          }
        }
        this.channelStatePersister.checkForBarrier(buffer, sequenceNumber);
      } catch (error) {
        // An event that cannot be decoded is the producer's fault: fail this channel with it.
        this.setError(error as Error);
        return;
      }
      this.channelStatePersister.maybePersist(buffer);
      if (isBlockingUpstream(type)) this.onBlockingUpstream();
      if (firstPriorityEvent) this.gate.notifyPriorityEvent?.(this, sequenceNumber);
      if (wasEmpty) this.notifyChannelNonEmpty();
    }
    if (backlog >= 0) this.onSenderBacklog(backlog);
  }

  /** Queues a priority event behind the earlier ones; true when it is the only one. */
  private addPriority(entry: Received): boolean {
    this.received.splice(this.numPriorityElements, 0, entry);
    return ++this.numPriorityElements === 1;
  }

  /** A priority EventAnnouncement of the timeoutable barrier in `buffer` (same sequence number). */
  private announce(buffer: NetworkBuffer, sequenceNumber: number): Received {
    const event = EventSerializer.fromBuffer(buffer);
    if (event.kind !== "CheckpointBarrier") {
      throw new IllegalStateError(
        `${this}: only a checkpoint barrier can be announced, but buffer ${sequenceNumber} holds ${event.kind}`,
      );
    }
    return {
      buffer: EventSerializer.toBuffer(new EventAnnouncement(event, sequenceNumber), true),
      sequenceNumber,
    };
  }

  /**
   * An aligned barrier arrived: the producer sends nothing more until resumed. Without exclusive
   * buffers, the floating buffers this channel holds would sit unused through the whole
   * alignment while the channels still awaited may find the gate's pool empty (with one
   * floating buffer per gate, a certain deadlock): give them back now, as Flink does. The
   * credit they stood for is void; the producer resets its credit on resume.
   */
  private onBlockingUpstream(): void {
    if (this.initialCredit !== 0) return;
    this.bufferManager.releaseFloatingBuffers();
    this.unannouncedCredit = 0;
  }

  /** Backlog from a BufferResponse or BacklogAnnouncement: borrow floating buffers for it. */
  onSenderBacklog(backlog: number): void {
    const added = this.bufferManager.requestFloatingBuffers(backlog);
    if (added > 0) this.notifyBufferAvailable(added);
  }

  /** An ErrorResponse for this channel, or the connection failed. */
  onError(cause: Error): void {
    if (isSluiceError(cause, ErrorCodes.PARTITION_NOT_FOUND) && !this.released) {
      this.retriggerOrFail(cause);
      return;
    }
    this.setError(cause);
  }

  /**
   * The producer's data server did not find the partition within its partition-request
   * timeout. As in Flink (1.19+), ask whether the producer is still coming up; if so, ask again
   * at once — the server's wait was the backoff — else fail. Each request counts the timeout
   * against a budget of 2 × `taskmanager.network.request-backoff.max`; once it is used up, the
   * channel fails with PartitionNotFound. A server that answered before its timeout (its
   * waiting requests at `taskmanager.network.max-waiting-partition-requests`) is asked again only
   * once the timeout has passed, so the budget is one of time, not of quick answers.
   */
  private retriggerOrFail(cause: Error): void {
    const client = this.client;
    if (client === undefined) {
      this.setError(cause);
      return;
    }
    const state = this.remoteGate.requestPartitionProducerState?.(this.partitionId);
    (state ?? Promise.resolve<ExecutionState>("RUNNING")).then(
      (producerState) => {
        if (this.released) return;
        if (!PRODUCING_STATES.has(producerState)) {
          this.setError(
            new PartitionNotFoundError(`${cause.message}; its producer is ${producerState}`, {
              cause,
              partitionId: this.partitionId,
            }),
          );
          return;
        }
        if (!this.backOffForRetry()) {
          this.setError(this.gaveUp(cause));
          return;
        }
        const waited = performance.now() - this.requestSentAt;
        this.retriggerTimer = setTimeout(
          () => {
            this.retriggerTimer = undefined;
            if (this.released) return;
            this.markRequestSent();
            client.retriggerSubpartitionRequest(this);
          },
          Math.max(0, this.partitionRequestTimeoutMs - waited),
        );
      },
      () => this.setError(cause),
    );
  }

  /**
   * Flink's RemoteInputChannel backoff: the server waited `partition-request-timeout` for the
   * partition, so that is what each retry adds; retries go on while the sum stays below twice
   * the maximum backoff. Without a server-side wait (timeout 0) there is no retry.
   */
  protected override increaseBackoff(): boolean {
    if (this.partitionRequestTimeoutMs <= 0) return false;
    this.currentBackoffMs += this.partitionRequestTimeoutMs;
    return this.currentBackoffMs < 2 * this.backoff.maxMs;
  }

  private markRequestSent(): void {
    this.requestSentAt = performance.now();
    this.partitionRequests++;
  }

  /** The PartitionNotFound a channel fails with once its retries are used up. */
  private gaveUp(cause: Error): Error {
    return new PartitionNotFoundError(
      `${this}: the partition was not found after ${this.partitionRequests} partition ` +
        `request(s) of up to ${this.partitionRequestTimeoutMs} ms each ` +
        `('taskmanager.network.partition-request-timeout'), the retry budget being 2 × ` +
        `${this.backoff.maxMs} ms ('taskmanager.network.request-backoff.max'): ${cause.message}`,
      { cause, partitionId: this.partitionId },
    );
  }

  /** New credit: announce it unless an announcement is already pending. */
  notifyBufferAvailable(credit: number): void {
    const previous = this.unannouncedCredit;
    this.unannouncedCredit += credit;
    if (previous === 0 && this.client !== undefined && !this.released) {
      this.client.notifyCreditAvailable(this);
    }
  }

  /** Taken by the client when it writes AddCredit: everything accumulated goes in one message. */
  getAndResetUnannouncedCredit(): number {
    const credit = this.unannouncedCredit;
    this.unannouncedCredit = 0;
    return credit;
  }

  getUnannouncedCredit(): number {
    return this.unannouncedCredit;
  }

  onBufferPoolDestroyed(): void {
    // The gate is closing; the channel is released with it.
  }

  // ------------------------------------------------------------------------------ the gate side

  getNextBuffer(): BufferAndAvailability | undefined {
    this.checkError();
    if (this.released) throw new CancelledError(`${this} has been released`);
    const next = this.received.shift();
    if (next === undefined) return undefined;
    if (this.numPriorityElements > 0) this.numPriorityElements--;
    return {
      buffer: next.buffer,
      moreAvailable: this.received.length > 0,
      sequenceNumber: next.sequenceNumber,
      morePriorityEvents: this.numPriorityElements > 0,
    };
  }

  /**
   * Hands the writer the data buffers queued before `barrier`'s barrier on this channel (all of
   * them when it has not arrived yet) and persists what arrives until it does.
   */
  override checkpointStarted(barrier: CheckpointBarrier): void {
    const known: NetworkBuffer[] = [];
    if (this.channelStatePersister.hasWriter()) {
      const barrierSequence = this.channelStatePersister.barrierSequenceNumber(barrier.id);
      for (let i = this.numPriorityElements; i < this.received.length; i++) {
        const entry = this.received[i] as Received;
        if (
          barrierSequence !== undefined &&
          !sequenceNumberPrecedes(entry.sequenceNumber, barrierSequence)
        ) {
          break;
        }
        if (entry.buffer.isBuffer()) known.push(entry.buffer.retainBuffer());
      }
    }
    this.channelStatePersister.startPersisting(barrier.id, known);
  }

  /**
   * The alignment of the announced barrier `sequenceNumber` timed out: moves it ahead of the
   * data queued before it, as a priority event (Flink's `convertToPriorityEvent`). The barrier
   * itself is unchanged; its upstream subpartition is blocked as for any aligned barrier.
   */
  override convertToPriorityEvent(sequenceNumber: number): void {
    const index = this.received.findIndex((entry) => entry.sequenceNumber === sequenceNumber);
    if (index < 0) {
      throw new IllegalStateError(
        `${this}: no queued buffer ${sequenceNumber} to move ahead of the data (it was read already?)`,
      );
    }
    if (index < this.numPriorityElements) {
      throw new IllegalStateError(`${this}: buffer ${sequenceNumber} has priority already`);
    }
    const [entry] = this.received.splice(index, 1) as [Received];
    if (entry.buffer.isBuffer()) {
      this.received.splice(index, 0, entry);
      throw new IllegalStateError(
        `${this}: buffer ${sequenceNumber} holds data, not an announced barrier`,
      );
    }
    const event = EventSerializer.fromBuffer(entry.buffer);
    entry.buffer.recycleBuffer();
    const first = this.addPriority({
      buffer: EventSerializer.toBuffer(event, true),
      sequenceNumber,
    });
    if (first) this.gate.notifyPriorityEvent?.(this, sequenceNumber);
  }

  /** Buffer debloating: sends NewBufferSize to the producer. */
  override announceBufferSize(newBufferSize: number): void {
    if (this.released) return;
    this.client?.notifyNewBufferSize(this, newBufferSize);
  }

  /**
   * Flink's count for debloating: the data buffers received and not read, plus the floating
   * buffers the sender's backlog asked for beyond the exclusive ones.
   */
  override getBuffersInUseCount(): number {
    return (
      this.received.length -
      this.numPriorityElements +
      Math.max(0, this.bufferManager.getNumberOfRequiredBuffers() - this.initialCredit)
    );
  }

  resumeConsumption(): void {
    if (this.client === undefined) {
      throw new IllegalStateError(`${this}: resumeConsumption before the partition was requested`);
    }
    // Credit announced after the barrier is void too: the producer starts over from zero.
    if (this.initialCredit === 0) this.unannouncedCredit = 0;
    this.client.resumeConsumption(this);
  }

  acknowledgeAllRecordsProcessed(): void {
    if (this.client === undefined) {
      throw new IllegalStateError(
        `${this}: acknowledgeAllRecordsProcessed before the partition was requested`,
      );
    }
    if (this.released) return;
    this.client.acknowledgeAllRecordsProcessed(this);
  }

  sendTaskEvent(event: TaskEvent): void {
    if (this.released) throw new CancelledError(`${this} has been released`);
    if (this.client === undefined) {
      // Flink's channel connects synchronously when it requests its partition; here the
      // connection may still be on its way (or the gate replays events to a channel that just
      // became known): keep the event until the request is sent.
      this.pendingTaskEvents.push(event);
      return;
    }
    this.client.sendTaskEvent(this.partitionId, event, this);
  }

  isReleased(): boolean {
    return this.released;
  }

  /** Buffers received and not yet taken by the gate. */
  override getNumberOfQueuedBuffers(): number {
    return this.received.length;
  }

  /** Bytes of the buffers received and not yet taken by the gate (data and events). */
  override getSizeOfQueuedBuffers(): number {
    let bytes = 0;
    for (const { buffer } of this.received) bytes += buffer.getSize();
    return bytes;
  }

  getNumberOfAvailableBuffers(): number {
    return this.bufferManager.getNumberOfAvailableBuffers();
  }

  /** Exclusive buffers in use and in total, for the gate's buffer usage gauges. */
  getExclusiveBufferUsage(): { readonly used: number; readonly total: number } {
    return {
      used: this.bufferManager.getNumberOfUsedExclusiveBuffers(),
      total: this.bufferManager.getNumberOfExclusiveBuffers(),
    };
  }

  /**
   * Floating buffers this channel borrowed from the gate's pool that hold no data yet (credit
   * announced to the sender): taken from the pool, but not in use (Flink's
   * `unsynchronizedGetFloatingBuffersAvailable`).
   */
  getNumberOfAvailableFloatingBuffers(): number {
    return this.bufferManager.getNumberOfAvailableFloatingBuffers();
  }

  releaseAllResources(): void {
    if (this.released) return;
    this.released = true;
    if (this.retriggerTimer !== undefined) clearTimeout(this.retriggerTimer);
    this.pendingTaskEvents = [];
    for (const { buffer } of this.received.splice(0)) buffer.recycleBuffer();
    this.numPriorityElements = 0;
    this.bufferManager.releaseAll();
    this.client?.close(this);
  }

  toString(): string {
    return `RemoteInputChannel#${this.channelIndex}[${this.partitionId}:${this.subpartitionIndex} via ${this.connectionId}]`;
  }
}
