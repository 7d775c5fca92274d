import {
  AvailabilityHelper,
  BufferDecompressionError,
  CancelledError,
  type CheckpointBarrier,
  deferred,
  EndOfPartitionEvent,
  EventSerializer,
  hasPriority,
  IllegalArgumentError,
  IllegalStateError,
  type IntermediateDataSetID,
  type IntermediateResultPartitionID,
  type LocalBufferPool,
  type NetworkBuffer,
  type ResultPartitionID,
  type TaskEvent,
} from "@sluice/core";
import type {
  BufferOrEvent,
  ChannelStateWriter,
  ExecutionState,
  InputGate,
  InputGateMetrics,
  PartitionProducerStateProvider,
  ResultPartitionType,
} from "@sluice/runtime-api";
import type { BufferDecompressor } from "../compression/buffer-decompressor.js";
import type { BufferDebloater } from "./buffer-debloater.js";
import {
  type ExclusiveBuffersFallback,
  type GateBuffersMode,
  hasExclusiveBuffers,
} from "./exclusive-buffers-fallback.js";
import {
  type InputBufferUsage,
  inPoolUsage,
  measureInputBufferUsage,
} from "./input-buffer-usage.js";
import type { InputChannel, InputChannelOwner } from "./input-channel.js";
import { InputCounters, type InputCounts } from "./input-counters.js";
import { RemoteInputChannel } from "./remote-input-channel.js";
import { type MillisClock, ThroughputCalculator } from "./throughput-calculator.js";
import { UnknownInputChannel } from "./unknown-input-channel.js";

// The types of the gate's own API (its options, `getBuffersMode`, `getBufferUsage`,
// `getInputCounts`), each defined next to what computes it.
export type { ExclusiveBuffersFallback, GateBuffersMode, InputBufferUsage, InputCounts };

/** Construction parameters of a SingleInputGate. */
export interface SingleInputGateOptions {
  readonly owningTaskName: string;
  readonly gateIndex: number;
  readonly consumedResultId: IntermediateDataSetID;
  readonly consumedPartitionType: ResultPartitionType;
  readonly numberOfInputChannels: number;
  /** Creates the gate's floating-buffer pool at `setup()` (Flink's gate buffer formula). */
  readonly bufferPoolFactory: () => LocalBufferPool;
  /**
   * Falls back to floating-only mode when the exclusive buffers of the remote channels cannot be
   * guaranteed at setup. Without one the gate behaves as Flink's: setup fails with
   * InsufficientBuffersError.
   */
  readonly exclusiveBuffersFallback?: ExclusiveBuffersFallback;
  /** Answers remote channels' producer-state checks after PartitionNotFound. */
  readonly partitionProducerStateProvider?: PartitionProducerStateProvider;
  /**
   * Decompresses compressed data buffers (when compression is enabled and the consumed type
   * supports it, as in Flink). Without one, a compressed buffer fails its channel.
   */
  readonly bufferDecompressor?: BufferDecompressor;
  /**
   * Buffer debloating (`taskmanager.network.memory.buffer-debloat.enabled`): computes the buffer
   * size the gate announces on {@link SingleInputGate.triggerDebloating}. Without one the gate
   * never announces a size.
   */
  readonly bufferDebloater?: BufferDebloater;
  /** The clock the debloating throughput is measured with; `performance.now` by default. */
  readonly throughputClock?: MillisClock;
}

/** Channels that need setup (remote channels take their exclusive buffers there). */
interface SetupCapable {
  setup(): void;
}

function hasSetup(channel: InputChannel): channel is InputChannel & SetupCapable {
  return typeof (channel as Partial<SetupCapable>).setup === "function";
}

/**
 * The input of a task for one consumed data set (Flink's SingleInputGate): one channel per
 * producer subpartition it reads, a pool of floating buffers shared by its remote channels, and a
 * queue of channels that have data. `pollNext()` is synchronous; a consumer awaits
 * `getAvailableFuture()` only when it returns nothing. Channels are served round-robin: a channel
 * with more data goes to the back of the queue, so one busy producer cannot starve the others.
 *
 * Priority (Flink's prioritized channel queue): a channel whose next item is a priority event (an
 * unaligned barrier or an EventAnnouncement, put at the head of its own queue) goes ahead of the
 * channels holding only data, behind other priority channels, so the task sees the event before
 * any more data; {@link hasPriorityEvent} and {@link getPriorityEventAvailableFuture} let it act
 * on such events while it does not read data (back-pressured).
 */
export class SingleInputGate implements InputGate, InputChannelOwner {
  readonly owningTaskName: string;
  readonly gateIndex: number;
  readonly consumedResultId: IntermediateDataSetID;
  readonly consumedPartitionType: ResultPartitionType;
  readonly numberOfInputChannels: number;
  private readonly bufferPoolFactory: () => LocalBufferPool;
  private readonly exclusiveBuffersFallback: ExclusiveBuffersFallback | undefined;
  private buffersMode: GateBuffersMode = "exclusive";
  private readonly producerStateProvider: PartitionProducerStateProvider | undefined;
  private readonly bufferDecompressor: BufferDecompressor | undefined;
  private bufferPool: LocalBufferPool | undefined;
  private readonly channels: InputChannel[];
  private readonly queue: InputChannel[] = [];
  /** The first `numPriorityChannels` channels of `queue` have a priority event next. */
  private numPriorityChannels = 0;
  private readonly priorityAvailability = new AvailabilityHelper();
  private channelStateWriter: ChannelStateWriter | undefined;
  private readonly bufferDebloater: BufferDebloater | undefined;
  private readonly throughputCalculator: ThroughputCalculator;
  private readonly enqueued: boolean[];
  private readonly endOfPartition: boolean[];
  private numberOfEndOfPartitions = 0;
  private readonly availability = new AvailabilityHelper();
  private requested = false;
  /** Channels still waiting for their producer's location (UnknownInputChannel). */
  private numberOfUninitializedChannels = 0;
  /** Task events sent while some channel was unknown; replayed to it once it is known. */
  private readonly pendingEvents: TaskEvent[] = [];
  private closed = false;
  private readonly closedSignal = deferred<void>();
  private failure: Error | undefined;
  private readonly counters = new InputCounters();
  readonly metrics: InputGateMetrics;

  constructor(options: SingleInputGateOptions) {
    if (!Number.isInteger(options.numberOfInputChannels) || options.numberOfInputChannels < 1) {
      throw new IllegalArgumentError(
        `numberOfInputChannels must be >= 1, got ${options.numberOfInputChannels}`,
      );
    }
    this.owningTaskName = options.owningTaskName;
    this.gateIndex = options.gateIndex;
    this.consumedResultId = options.consumedResultId;
    this.consumedPartitionType = options.consumedPartitionType;
    this.numberOfInputChannels = options.numberOfInputChannels;
    this.bufferPoolFactory = options.bufferPoolFactory;
    this.exclusiveBuffersFallback = options.exclusiveBuffersFallback;
    this.producerStateProvider = options.partitionProducerStateProvider;
    this.bufferDecompressor = options.bufferDecompressor;
    this.bufferDebloater = options.bufferDebloater;
    this.throughputCalculator = new ThroughputCalculator(options.throughputClock);
    this.channels = new Array<InputChannel>(this.numberOfInputChannels);
    this.enqueued = new Array<boolean>(this.numberOfInputChannels).fill(false);
    this.endOfPartition = new Array<boolean>(this.numberOfInputChannels).fill(false);
    this.availability.resetUnavailable();
    this.priorityAvailability.resetUnavailable();
    const counters = this.counters;
    const self = this;
    this.metrics = {
      get numBytesIn() {
        return counters.numBytesIn;
      },
      get numBuffersIn() {
        return counters.numBuffersIn;
      },
      inPoolUsage(): number {
        return inPoolUsage(self.getBufferUsage());
      },
    };
  }

  /** The gate's buffers and how many hold data, for the task's input buffer gauges. */
  getBufferUsage(): InputBufferUsage {
    return measureInputBufferUsage(this.channels, this.bufferPool);
  }

  /**
   * What the gate received, split by where it came from (Flink's `InputChannelMetrics`): bytes
   * (data and events) and data buffers from channels of this process (local) and from other
   * processes (remote). Local plus remote is `metrics.numBytesIn` / `metrics.numBuffersIn`.
   */
  getInputCounts(): InputCounts {
    return this.counters.snapshot();
  }

  /**
   * Bytes of the buffers the remote channels received and the task has not read (Flink's
   * `inputQueueSize`). Local channels count 0: they read the producer's queue in place, which
   * the producer's `outputQueueSize` already counts.
   */
  getSizeOfQueuedBuffers(): number {
    let bytes = 0;
    for (const channel of this.channels) bytes += channel?.getSizeOfQueuedBuffers() ?? 0;
    return bytes;
  }

  /**
   * Partition requests the gate's channels retried because the producer had not registered the
   * partition yet (PartitionNotFound): each costs a backoff, so a deploy without them is faster.
   */
  getPartitionRequestRetries(): number {
    let retries = 0;
    for (const channel of this.channels) retries += channel?.getPartitionRequestRetries() ?? 0;
    return retries;
  }

  /** The debloater's last buffer size, or `undefined` without debloating. */
  getDebloatedBufferSize(): number | undefined {
    return this.bufferDebloater?.getLastBufferSize();
  }

  /** The debloater's last estimate of ms to consume the buffered data, or `undefined`. */
  getEstimatedTimeToConsumeBuffersMillis(): number | undefined {
    return this.bufferDebloater?.getLastEstimatedTimeToConsumeMillis();
  }

  /**
   * Buffers queued in each remote channel, for the detailed queue metrics (Flink's
   * `InputGateMetrics` count remote channels only: a local one reads the producer's queue).
   */
  getQueueLengthsOfRemoteChannels(): number[] {
    const lengths: number[] = [];
    for (const channel of this.channels) {
      if (channel instanceof RemoteInputChannel) lengths.push(channel.getNumberOfQueuedBuffers());
    }
    return lengths;
  }

  /** Buffers received by the channels and not yet polled (Flink's `getNumberOfQueuedBuffers`). */
  getNumberOfQueuedBuffers(): number {
    let queued = 0;
    for (const channel of this.channels) queued += channel?.getNumberOfQueuedBuffers() ?? 0;
    return queued;
  }

  /** Installs channel `channel.channelIndex` (called by the environment while building the gate). */
  setInputChannel(channel: InputChannel): void {
    if (channel.channelIndex < 0 || channel.channelIndex >= this.numberOfInputChannels) {
      throw new IllegalArgumentError(
        `channel index ${channel.channelIndex} out of [0, ${this.numberOfInputChannels})`,
      );
    }
    const previous = this.channels[channel.channelIndex];
    if (previous instanceof UnknownInputChannel) this.numberOfUninitializedChannels--;
    if (channel instanceof UnknownInputChannel) this.numberOfUninitializedChannels++;
    this.channels[channel.channelIndex] = channel;
  }

  getChannel(index: number): InputChannel {
    const channel = this.channels[index];
    if (channel === undefined) throw new IllegalArgumentError(`no input channel ${index}`);
    return channel;
  }

  /** Creates the floating-buffer pool and lets channels take their exclusive buffers. */
  setup(): void {
    if (this.bufferPool !== undefined) {
      throw new IllegalStateError(`${this}: setup() was already called`);
    }
    for (let i = 0; i < this.numberOfInputChannels; i++) {
      if (this.channels[i] === undefined) {
        throw new IllegalStateError(`${this}: input channel ${i} was never set`);
      }
    }
    this.bufferPool = this.createBufferPool();
    for (const channel of this.channels) {
      if (hasSetup(channel)) channel.setup();
    }
  }

  /**
   * The floating pool, after deciding the gate's mode: when the exclusive buffers of all remote
   * channels (with the pool's minimum) cannot be guaranteed, the whole gate goes floating-only
   * at once, rather than some channels failing part-way through their setup.
   */
  private createBufferPool(): LocalBufferPool {
    const fallback = this.exclusiveBuffersFallback;
    if (fallback === undefined) return this.bufferPoolFactory();
    let exclusive = 0;
    for (const channel of this.channels) {
      if (hasExclusiveBuffers(channel)) exclusive += channel.initialCredit;
    }
    const reason = exclusive > 0 ? fallback.reasonToFallBack(exclusive) : undefined;
    if (reason === undefined) return this.bufferPoolFactory();
    this.buffersMode = "floating-only";
    for (const channel of this.channels) {
      if (hasExclusiveBuffers(channel)) channel.useFloatingBuffersOnly();
    }
    const pool = fallback.createFloatingOnlyBufferPool();
    fallback.onFallback(this, reason, pool);
    return pool;
  }

  /** How the remote channels get their buffers; `floating-only` after a fallback at setup. */
  getBuffersMode(): GateBuffersMode {
    return this.buffersMode;
  }

  /** What the producer of `partitionId` is doing, for a channel's retry decision. */
  requestPartitionProducerState(partitionId: ResultPartitionID): Promise<ExecutionState> {
    if (this.producerStateProvider === undefined) return Promise.resolve("RUNNING");
    return this.producerStateProvider.requestPartitionProducerState(
      this.consumedResultId,
      partitionId,
    );
  }

  /** The floating-buffer pool (remote channels draw from it). */
  getBufferPool(): LocalBufferPool {
    if (this.bufferPool === undefined) {
      throw new IllegalStateError(`${this}: setup() must be called first`);
    }
    return this.bufferPool;
  }

  /** Asks every channel's producer for its subpartition. Idempotent. */
  requestPartitions(): void {
    if (this.requested) return;
    if (this.bufferPool === undefined) {
      throw new IllegalStateError(`${this}: setup() must be called before requestPartitions()`);
    }
    this.requested = true;
    for (const channel of this.channels) channel.requestSubpartitions();
  }

  /**
   * Replaces every UnknownInputChannel reading partition `partitionId` with `create(old)` once the
   * producer's location is known (Flink's updateInputChannel). A gate reading a range of
   * subpartitions has one such channel per subpartition, and all of them are replaced. Channels
   * match by the partition, not by the producer's attempt: the descriptor that makes them known
   * may name a newer attempt than the unknown one was created with. Task events sent meanwhile
   * are replayed to each new channel. Returns how many channels were replaced (0: none waited
   * for that partition).
   */
  updateInputChannel(
    partitionId: IntermediateResultPartitionID,
    create: (unknown: UnknownInputChannel) => InputChannel,
  ): number {
    if (this.closed) return 0; // raced with the task's failure or cancellation, as in Flink
    let replaced = 0;
    for (let index = 0; index < this.channels.length; index++) {
      const old = this.channels[index];
      if (
        !(old instanceof UnknownInputChannel) ||
        !old.partitionId.partitionId.equals(partitionId)
      ) {
        continue;
      }
      const replacement = create(old);
      if (replacement.channelIndex !== index) {
        throw new IllegalStateError(
          `replacement channel index ${replacement.channelIndex} != ${index}`,
        );
      }
      old.releaseAllResources();
      this.channels[index] = replacement;
      this.numberOfUninitializedChannels--;
      replaced++;
      if (this.channelStateWriter !== undefined) {
        replacement.setChannelStateWriter(this.channelStateWriter);
      }
      // A channel that becomes known later follows the gate's mode.
      if (this.buffersMode === "floating-only" && hasExclusiveBuffers(replacement)) {
        replacement.useFloatingBuffersOnly();
      }
      if (this.bufferPool !== undefined && hasSetup(replacement)) replacement.setup();
      if (this.requested) replacement.requestSubpartitions();
      for (const event of this.pendingEvents) replacement.sendTaskEvent(event);
    }
    if (this.numberOfUninitializedChannels === 0) this.pendingEvents.length = 0;
    return replaced;
  }

  // ------------------------------------------------------------------------------- consuming

  notifyChannelNonEmpty(channel: InputChannel): void {
    if (this.closed) return;
    const index = channel.channelIndex;
    if (this.channels[index] !== channel || this.enqueued[index] || this.endOfPartition[index]) {
      return;
    }
    this.enqueued[index] = true;
    this.queue.push(channel);
    this.onDataQueued();
  }

  /**
   * `channel` put a priority event at the head of its queue: it is served before every channel
   * without one (Flink's `notifyPriorityEvent`).
   */
  notifyPriorityEvent(channel: InputChannel, _prioritySequenceNumber: number): void {
    if (this.closed) return;
    const index = channel.channelIndex;
    if (this.channels[index] !== channel || this.endOfPartition[index]) return;
    this.queuePriority(channel);
  }

  private queuePriority(channel: InputChannel): void {
    const index = channel.channelIndex;
    if (this.enqueued[index]) {
      const at = this.queue.indexOf(channel);
      if (at < this.numPriorityChannels) return;
      this.queue.splice(at, 1);
    }
    this.enqueued[index] = true;
    this.queue.splice(this.numPriorityChannels, 0, channel);
    this.numPriorityChannels++;
    this.priorityAvailability.resetAvailable();
    this.onDataQueued();
  }

  private onDataQueued(): void {
    if (!this.availability.isAvailable()) this.throughputCalculator.resumeMeasurement();
    this.availability.resetAvailable();
  }

  /** True when a channel has a priority event next: {@link pollNext} returns it first. */
  hasPriorityEvent(): boolean {
    return this.numPriorityChannels > 0;
  }

  /** Resolves once a channel has a priority event next (at once when one has). */
  getPriorityEventAvailableFuture(): Promise<void> {
    return this.priorityAvailability.getAvailableFuture();
  }

  /**
   * The next buffer or event, or `undefined` when no channel has one now (await
   * `getAvailableFuture()`), or when the gate is finished. Data buffers are owned by the caller,
   * who must recycle them; events are deserialized and their buffers recycled here. Throws the
   * first channel error (producer failure, connection loss, partition not found).
   */
  pollNext(): BufferOrEvent | undefined {
    if (this.failure !== undefined) throw this.failure;
    if (this.closed) throw new CancelledError(`${this} is closed`);
    for (;;) {
      const channel = this.queue.shift();
      if (channel === undefined) {
        if (!this.isFinished() && this.availability.isAvailable()) {
          this.availability.resetUnavailable();
          this.throughputCalculator.pauseMeasurement();
        }
        return undefined;
      }
      if (this.numPriorityChannels > 0) {
        this.numPriorityChannels--;
        if (this.numPriorityChannels === 0) this.priorityAvailability.resetUnavailable();
      }
      this.enqueued[channel.channelIndex] = false;
      // A channel that ended may still have been queued by a late notification.
      if (this.endOfPartition[channel.channelIndex]) continue;
      let next: ReturnType<InputChannel["getNextBuffer"]>;
      try {
        next = channel.getNextBuffer();
      } catch (error) {
        this.failure = error as Error;
        this.availability.resetAvailable();
        throw error;
      }
      if (next === undefined) continue;
      if (next.morePriorityEvents === true) this.queuePriority(channel);
      else if (next.moreAvailable) this.notifyChannelNonEmpty(channel);
      const buffer = next.buffer;
      const size = buffer.getSize();
      const local = channel.isLocal();
      this.counters.countBytes(size, local);
      if (buffer.isCompressed()) this.decompress(channel, buffer);
      if (buffer.isBuffer()) {
        this.counters.countBuffer(local);
        this.throughputCalculator.incomingDataSize(size);
        return {
          channelIndex: channel.channelIndex,
          buffer,
          moreAvailable: this.queue.length > 0,
          size,
        };
      }
      const priority = hasPriority(buffer.getDataType());
      let event: ReturnType<typeof EventSerializer.fromBuffer>;
      try {
        event = EventSerializer.fromBuffer(buffer);
      } finally {
        buffer.recycleBuffer();
      }
      if (event instanceof EndOfPartitionEvent) this.onEndOfPartition(channel);
      return {
        channelIndex: channel.channelIndex,
        event,
        moreAvailable: this.queue.length > 0,
        size,
        ...(priority ? { hasPriority: true } : {}),
      };
    }
  }

  /**
   * Decompresses a compressed data buffer in place (Flink decompresses in the gate, for local and
   * remote channels alike). A failure fails the channel that delivered it, and so the gate.
   */
  private decompress(channel: InputChannel, buffer: NetworkBuffer): void {
    try {
      if (this.bufferDecompressor === undefined) {
        throw new BufferDecompressionError(
          `${this}: ${channel} delivered a compressed buffer, but this gate has no decompressor ` +
            "('taskmanager.network.batch-shuffle.compression.enabled' is false or the codec is " +
            "NONE here, or the consumed partition type is never compressed)",
        );
      }
      this.bufferDecompressor.decompressToOriginalBuffer(buffer, `${this} ${channel}`);
    } catch (error) {
      buffer.recycleBuffer();
      channel.setError(error as Error);
      this.failure = error as Error;
      this.availability.resetAvailable();
      throw error;
    }
  }

  private onEndOfPartition(channel: InputChannel): void {
    const index = channel.channelIndex;
    if (this.endOfPartition[index]) {
      throw new IllegalStateError(`${this}: channel ${index} delivered EndOfPartition twice`);
    }
    this.endOfPartition[index] = true;
    this.numberOfEndOfPartitions++;
    // Releasing the view counts the subpartition as consumed, so the producer can release it.
    channel.releaseAllResources();
    if (this.isFinished()) this.availability.resetAvailable();
  }

  /** True once every channel delivered EndOfPartition. */
  isFinished(): boolean {
    return this.numberOfEndOfPartitions === this.numberOfInputChannels;
  }

  isAvailable(): boolean {
    return this.availability.isAvailable();
  }

  getAvailableFuture(): Promise<void> {
    return this.availability.getAvailableFuture();
  }

  getFailureCause(): Error | undefined {
    return this.failure;
  }

  resumeConsumption(channelIndex: number): void {
    this.getChannel(channelIndex).resumeConsumption();
  }

  /**
   * The task read the EndOfData of channel `channelIndex` and processed every record before it
   * (Flink's `acknowledgeAllRecordsProcessed`): the producer's subpartition learns it, locally or
   * with an AckAllUserRecordsProcessed message.
   */
  acknowledgeAllRecordsProcessed(channelIndex: number): void {
    this.getChannel(channelIndex).acknowledgeAllRecordsProcessed();
  }

  /**
   * Sends a task event to the producer of every channel. Channels whose producer is not known
   * yet get it once they are (Flink keeps such events and replays them).
   */
  sendTaskEvent(event: TaskEvent): void {
    for (const channel of this.channels) channel.sendTaskEvent(event);
    if (this.numberOfUninitializedChannels > 0) this.pendingEvents.push(event);
  }

  // ------------------------------------------------------- unaligned checkpoints, debloating

  /** Where the channels persist in-flight input of unaligned checkpoints. */
  setChannelStateWriter(writer: ChannelStateWriter): void {
    this.channelStateWriter = writer;
    for (const channel of this.channels) channel?.setChannelStateWriter(writer);
  }

  /**
   * Unaligned checkpoint `barrier` started at the task: every channel that has not ended hands
   * over the data it holds before the barrier and persists what it receives until its barrier.
   */
  checkpointStarted(barrier: CheckpointBarrier): void {
    for (let i = 0; i < this.numberOfInputChannels; i++) {
      if (!this.endOfPartition[i]) (this.channels[i] as InputChannel).checkpointStarted(barrier);
    }
  }

  /** Checkpoint `checkpointId` completed or was aborted at the task: channels stop persisting. */
  checkpointStopped(checkpointId: bigint): void {
    for (const channel of this.channels) channel?.checkpointStopped(checkpointId);
  }

  /** Moves the announced barrier `sequenceNumber` of channel `channelIndex` ahead of its data. */
  convertToPriorityEvent(channelIndex: number, sequenceNumber: number): void {
    if (this.endOfPartition[channelIndex]) return;
    this.getChannel(channelIndex).convertToPriorityEvent(sequenceNumber);
  }

  /**
   * Buffer debloating (Flink's `triggerDebloating`): the throughput since the last call and the
   * buffers in use give the buffer size that holds the target of in-flight data; when the
   * debloater decides it is worth announcing, every open channel tells its producer.
   */
  triggerDebloating(): void {
    const debloater = this.bufferDebloater;
    if (debloater === undefined || this.closed || this.isFinished()) return;
    const throughput = this.throughputCalculator.calculateThroughput();
    let buffersInUse = 0;
    for (const channel of this.channels) buffersInUse += channel?.getBuffersInUseCount() ?? 0;
    const newSize = debloater.recalculateBufferSize(throughput, buffersInUse);
    if (newSize === undefined) return;
    for (let i = 0; i < this.numberOfInputChannels; i++) {
      if (!this.endOfPartition[i]) this.channels[i]?.announceBufferSize(newSize);
    }
  }

  /** The last throughput measured for debloating, in bytes per second. */
  getLastThroughput(): number {
    return this.throughputCalculator.getLastThroughput();
  }

  /** Releases every channel and the floating pool. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const channel of this.channels) channel?.releaseAllResources();
    this.queue.length = 0;
    this.numPriorityChannels = 0;
    this.priorityAvailability.resetAvailable();
    this.bufferPool?.destroy();
    this.availability.resetAvailable();
    this.closedSignal.resolve();
  }

  /**
   * Resolves once the gate was closed (Flink's `getCloseFuture`): whoever keeps a gate for
   * lookups lets go of it then.
   */
  get closeFuture(): Promise<void> {
    return this.closedSignal.promise;
  }

  isClosed(): boolean {
    return this.closed;
  }

  toString(): string {
    return `SingleInputGate#${this.gateIndex}[${this.owningTaskName}, ${this.consumedResultId}]`;
  }
}
