import {
  ConfigurationError,
  type ExecutionAttemptID,
  IllegalArgumentError,
  IllegalStateError,
  LimitExceededError,
  NetworkBufferPool,
  type ResourceID,
  type ResultPartitionID,
  SharedNetworkMemory,
  ThreadDoorbell,
} from "@sluice/core";
import {
  type InputGateDeploymentDescriptor,
  isNetworkShuffleDescriptor,
  isUnknownShuffleDescriptor,
  type PartitionInfo,
  type PartitionProducerStateProvider,
  type ResultPartitionDeploymentDescriptor,
  type ShuffleDescriptor,
  type ShuffleEnvironment,
  type ShuffleEnvironmentContext,
  type ShuffleIOOwnerContext,
  type ShuffleMetricSink,
  type TaskEventPublisher,
  type TaskSlotThreadsContext,
} from "@sluice/runtime-api";
import {
  type BlockCompressionFactory,
  createBlockCompressionFactory,
} from "../compression/block-compression-factory.js";
import { BufferCompressor } from "../compression/buffer-compressor.js";
import { BufferDecompressor } from "../compression/buffer-decompressor.js";
import { BufferDebloater } from "../consumer/buffer-debloater.js";
import { ConnectionID } from "../consumer/connection-id.js";
import type { Backoff, InputChannel } from "../consumer/input-channel.js";
import { LocalInputChannel } from "../consumer/local-input-channel.js";
import { RemoteInputChannel } from "../consumer/remote-input-channel.js";
import { SingleInputGate } from "../consumer/single-input-gate.js";
import { UnknownInputChannel } from "../consumer/unknown-input-channel.js";
import {
  registerBatchShuffleMetrics,
  registerEnvironmentMetrics,
  registerInputMetrics,
  registerOutputMetrics,
} from "../metrics/shuffle-metrics.js";
import { PartitionRequestClientFactory } from "../netty/client/partition-request-client-factory.js";
import { PartitionRequestServerHandler } from "../netty/server/partition-request-server-handler.js";
import type { Transport, TransportServer } from "../netty/transport/transport.js";
import { emitTransportWarning } from "../netty/transport/transport-warning.js";
import { BatchShuffleCounters } from "../partition/batch-shuffle-counters.js";
import { BatchShuffleReadBufferPool } from "../partition/batch-shuffle-read-buffer-pool.js";
import { FileChannelManager } from "../partition/file-channel-manager.js";
import { PipelinedResultPartition } from "../partition/pipelined-result-partition.js";
import type { ResultPartitionOptions } from "../partition/result-partition.js";
import { ResultPartitionManager } from "../partition/result-partition-manager.js";
import type { ResultPartitionProvider } from "../partition/result-partition-provider.js";
import { SortMergeResultPartition } from "../partition/sort-merge-result-partition.js";
import { TaskEventDispatcher } from "../partition/task-event-publisher.js";
import { TaskSlotPartitionProvider } from "../threads/task-slot-partition-provider.js";
import { BuffersFallback } from "./buffers-fallback.js";
import { configuredOutputPoolSize, createGateBuffersSpec } from "./gate-buffers-spec.js";
import {
  type NetworkShuffleEnvironmentConfiguration,
  readNetworkShuffleEnvironmentConfiguration,
} from "./network-shuffle-environment-configuration.js";
import { validateNetworkShuffleConfiguration } from "./validate-network-shuffle-configuration.js";

/** A writer of the network shuffle: pipelined in memory, or blocking (sort-merge) on disk. */
export type NetworkResultPartition = PipelinedResultPartition | SortMergeResultPartition;

/**
 * One worker's shuffle (Flink's NettyShuffleEnvironment): its NetworkBufferPool, the registry of
 * the partitions it produces, the data server that serves them to other workers, and the
 * connections to other workers' data servers. Writers and gates for the worker's tasks are
 * created here from deployment descriptors. With no transport it runs local-only (`start()`
 * returns -1).
 *
 * Pipelined types get a `PipelinedResultPartition`, BLOCKING and BLOCKING_PERSISTENT a
 * `SortMergeResultPartition` whose files go to the worker's folders (`tmpDirPaths` of the
 * context, else `io.tmp.dirs`, else the system's) and live until `releasePartitionsLocally` or
 * `close()`. Blocking partitions compress their data buffers, and gates that consume them
 * decompress, when `taskmanager.network.batch-shuffle.compression.enabled` (Flink's rule: never
 * for pipelined types).
 *
 * In a task manager whose slots run on worker threads (`ShuffleEnvironmentContext.taskSlotThreads`)
 * there is one environment per thread, all over the task manager's shared network memory. A
 * slot's environment has its tasks' partitions and gates and no data server: a channel to
 * another slot's partition reads it through shared memory (a `LocalInputChannel` over a
 * cross-thread view), one to another task manager connects from the slot's thread. The main
 * thread's environment runs no task: its data server serves every slot's partitions, so other
 * task managers keep one connection to this one.
 */
export class NetworkShuffleEnvironment
  implements ShuffleEnvironment<NetworkResultPartition, SingleInputGate>
{
  readonly resourceId: ResourceID;
  readonly settings: NetworkShuffleEnvironmentConfiguration;
  readonly networkBufferPool: NetworkBufferPool;
  readonly resultPartitionManager: ResultPartitionManager;
  /**
   * Where local channels and the data server get views: the partition manager, or, with slot
   * threads, a provider that also reads the partitions of the other slots' threads.
   */
  readonly partitionProvider: ResultPartitionProvider;
  /** Set when the environment serves one thread of a threaded task manager. */
  private readonly threads: TaskSlotThreadsContext | undefined;
  private readonly slotProvider: TaskSlotPartitionProvider | undefined;
  private readonly doorbell: ThreadDoorbell | undefined;
  /** Subscriptions for task events sent upstream by consumers (when the worker brings none). */
  readonly taskEventDispatcher = new TaskEventDispatcher();
  /** Where task events go: the worker's publisher from the context, else our dispatcher. */
  private readonly taskEventPublisher: TaskEventPublisher;
  private readonly transport: Transport | undefined;
  private readonly clientFactory: PartitionRequestClientFactory | undefined;
  private server: TransportServer | undefined;
  private readonly serverHandlers = new Set<PartitionRequestServerHandler>();
  /** Server handlers whose connection closed while some of its writes were still in flight. */
  private readonly closedServerHandlers = new Set<PartitionRequestServerHandler>();
  /**
   * The open gates by consumer attempt, for updatePartitionInfo; a gate leaves once it closed, so
   * nothing of a finished task stays reachable from here.
   */
  private readonly gatesByConsumer = new Map<string, SingleInputGate[]>();
  private readonly backoff: Backoff;
  /** The worker's folders for blocking partitions. */
  readonly fileChannelManager: FileChannelManager;
  private readBufferPool: BatchShuffleReadBufferPool | undefined;
  /** What this worker's blocking partitions wrote, compressed and deleted (its metrics). */
  readonly batchShuffleCounters = new BatchShuffleCounters();
  private compressionFactory: BlockCompressionFactory | undefined;
  private readonly buffersFallback: BuffersFallback;
  private started = false;
  private closed = false;

  /**
   * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) naming the keys when a value is invalid or
   *   the settings cannot serve one channel (`validateNetworkShuffleConfiguration`): a worker
   *   that could not work refuses to start.
   */
  constructor(context: ShuffleEnvironmentContext, transport?: Transport) {
    this.resourceId = context.taskExecutorResourceId;
    this.settings = readNetworkShuffleEnvironmentConfiguration(
      context.configuration,
      context.networkMemorySize,
    );
    validateNetworkShuffleConfiguration(this.settings, {
      networkMemoryFromContext: context.networkMemorySize > 0,
    });
    this.resultPartitionManager = new ResultPartitionManager({
      maxWaitingPartitionRequests: this.settings.maxWaitingPartitionRequests,
    });
    const threads = context.taskSlotThreads;
    this.threads = threads;
    if (threads === undefined) {
      this.networkBufferPool = NetworkBufferPool.fromMemorySize(
        this.settings.networkMemoryBytes,
        this.settings.segmentSize,
      );
      this.partitionProvider = this.resultPartitionManager;
    } else {
      const memory = SharedNetworkMemory.attach(threads.sharedMemory, threads.threadIndex);
      this.networkBufferPool = new NetworkBufferPool(memory);
      this.doorbell = new ThreadDoorbell(threads.signals, threads.threadIndex);
      this.slotProvider = new TaskSlotPartitionProvider(
        this.resultPartitionManager,
        threads,
        memory,
        this.doorbell,
      );
      this.partitionProvider = this.slotProvider;
    }
    this.buffersFallback = new BuffersFallback(this.networkBufferPool, this.settings);
    this.transport = context.localCommunicationOnly ? undefined : transport;
    this.taskEventPublisher = context.taskEventPublisher ?? this.taskEventDispatcher;
    this.fileChannelManager = new FileChannelManager(
      context.tmpDirPaths.length > 0 ? context.tmpDirPaths : this.settings.tmpDirs,
    );
    this.backoff = {
      initialMs: this.settings.requestBackoffInitialMs,
      maxMs: this.settings.requestBackoffMaxMs,
    };
    if (context.metrics !== undefined) {
      registerEnvironmentMetrics(
        context.metrics,
        this.networkBufferPool,
        () => this.buffersFallback.numberOfFallbacks,
      );
      registerBatchShuffleMetrics(context.metrics, this.batchShuffleCounters, () =>
        this.getReadBufferPoolUsage(),
      );
    }
    if (this.transport !== undefined) {
      this.clientFactory = new PartitionRequestClientFactory(this.transport, {
        connectTimeoutMs: this.settings.connectTimeoutMs,
        retries: this.settings.retries,
        maxFrameSize: this.settings.maxFrameSize,
        // Half the peer's idle timeout: the consumer closes an idle connection before the
        // producer's server would, so a new job never picks one that is being closed under it.
        keepIdleMs: this.settings.reuseConnectionsAcrossJobs
          ? Math.floor(this.settings.idleConnectionTimeoutMs / 2)
          : 0,
      });
    }
  }

  /** Starts the data server; returns its port, or -1 when running local-only. */
  async start(): Promise<number> {
    if (this.started) throw new IllegalStateError("NetworkShuffleEnvironment already started");
    this.started = true;
    const transport = this.transport;
    // A slot's thread serves nobody directly: the main thread's data server serves its partitions.
    if (transport === undefined || this.threads?.role === "slot") return -1;
    this.server = await transport.listen({
      host: this.settings.bindHost,
      port: this.settings.dataPort,
      maxFrameSize: this.settings.maxFrameSize,
      onConnection: (connection) => {
        if (this.closed) {
          connection.destroy();
          return;
        }
        const s = this.settings;
        const handler = new PartitionRequestServerHandler(
          connection,
          this.partitionProvider,
          this.taskEventPublisher,
          {
            maxFrameSize: s.maxFrameSize,
            partitionRequestTimeoutMs: s.partitionRequestTimeoutMs,
            maxPartitionRequestsPerConnection: s.maxPartitionRequestsPerConnection,
            maxOutboundBytes: s.maxOutboundBytesPerConnection,
            idleTimeoutMs: s.idleConnectionTimeoutMs,
            frameReadTimeoutMs: s.frameReadTimeoutMs,
            onClosed: (closed) => {
              this.serverHandlers.delete(closed);
              // Its writes may still be in flight: close() waits for them too.
              this.closedServerHandlers.add(closed);
              void closed.whenWritesDone().then(() => this.closedServerHandlers.delete(closed));
            },
          },
        );
        if (this.serverHandlers.size >= s.maxConnections) {
          // Refused with a reason rather than dropped: the consumers on the other side fail
          // naming the limit instead of seeing a bare reset.
          handler.refuse(
            new LimitExceededError(
              `the data server of worker ${this.resourceId} already has ${this.serverHandlers.size} ` +
                `connections ('taskmanager.network.max-connections' = ${s.maxConnections}); ` +
                `refused the connection from ${connection.remoteAddress}`,
            ),
          );
          return;
        }
        this.serverHandlers.add(handler);
      },
      // The server keeps listening after such an error (accept failing with EMFILE, ...);
      // the operator needs to see it.
      onError: (error) =>
        emitTransportWarning(
          `data server of worker ${this.resourceId} (${transport.name} on ${this.settings.bindHost}:${this.server?.port ?? this.settings.dataPort})`,
          error,
        ),
    });
    return this.server.port;
  }

  /** The data server's port (after start), or -1. */
  getDataPort(): number {
    return this.server?.port ?? -1;
  }

  createShuffleIOOwnerContext(
    ownerName: string,
    executionAttemptId: ExecutionAttemptID,
    metrics?: ShuffleMetricSink,
  ): ShuffleIOOwnerContext {
    return metrics === undefined
      ? { ownerName, executionAttemptId }
      : { ownerName, executionAttemptId, metrics };
  }

  createResultPartitionWriters(
    ownerContext: ShuffleIOOwnerContext,
    descriptors: readonly ResultPartitionDeploymentDescriptor[],
  ): NetworkResultPartition[] {
    this.checkOpen();
    this.checkRunsTasks(ownerContext);
    const partitions = descriptors.map((descriptor, index) =>
      this.createResultPartition(ownerContext, index, descriptor),
    );
    return this.registeringMetrics(ownerContext, partitions, registerOutputMetrics);
  }

  /** Registers the metrics of what was just created for a task, when it reports metrics. */
  private registeringMetrics<T>(
    ownerContext: ShuffleIOOwnerContext,
    created: T[],
    register: (metrics: ShuffleMetricSink, created: readonly T[], detailed: boolean) => void,
  ): T[] {
    if (ownerContext.metrics !== undefined) {
      register(ownerContext.metrics, created, this.settings.detailedMetrics);
    }
    return created;
  }

  private createResultPartition(
    ownerContext: ShuffleIOOwnerContext,
    index: number,
    descriptor: ResultPartitionDeploymentDescriptor,
  ): NetworkResultPartition {
    const { partitionDescriptor, shuffleDescriptor } = descriptor;
    const type = partitionDescriptor.partitionType;
    const numberOfSubpartitions = partitionDescriptor.numberOfSubpartitions;
    const s = this.settings;
    if (!type.isPipelined && !type.isBlocking) {
      throw new IllegalArgumentError(
        `${ownerContext.ownerName}: partition type ${type.name} is not supported by the network shuffle (pipelined and blocking only)`,
      );
    }
    if (type.isBlocking && numberOfSubpartitions < s.sortShuffleMinParallelism) {
      throw new ConfigurationError(
        `${ownerContext.ownerName}: a ${type.name} partition of ${numberOfSubpartitions} subpartitions is below ` +
          `'taskmanager.network.sort-shuffle.min-parallelism' (${s.sortShuffleMinParallelism}); Sluice has only the ` +
          "sort-merge blocking shuffle (no hash-based one), so set that key to 1",
      );
    }
    const { min, max } = configuredOutputPoolSize(s, numberOfSubpartitions, type);
    const partitionId = shuffleDescriptor.resultPartitionId;
    const name = `output pool of ${partitionId} [${ownerContext.ownerName}]`;
    const bufferPoolFactory = () =>
      this.networkBufferPool.createBufferPool(
        this.buffersFallback.outputPoolGuarantee(type, min, name),
        max,
        {
          numberOfSubpartitions,
          maxBuffersPerChannel: s.maxBuffersPerChannel,
          // Flink lends overdraft buffers to pipelined partitions only: a blocking one spills instead.
          maxOverdraftBuffersPerGate: type.isPipelined ? s.maxOverdraftBuffersPerGate : 0,
          name,
        },
      );
    const options: ResultPartitionOptions = {
      owningTaskName: ownerContext.ownerName,
      partitionIndex: index,
      partitionId,
      partitionType: type,
      numberOfSubpartitions,
      partitionManager: this.resultPartitionManager,
      maxRecordSize: s.maxRecordSize,
      bufferPoolFactory,
    };
    if (type.isBlocking) {
      const factory = type.supportsCompression ? this.getCompressionFactory() : undefined;
      return new SortMergeResultPartition({
        ...options,
        segmentSize: s.segmentSize,
        fileChannelManager: this.fileChannelManager,
        readBufferPool: this.getReadBufferPool(),
        counters: this.batchShuffleCounters,
        bufferCompressor: factory === undefined ? undefined : new BufferCompressor(factory),
        initialSequenceNumber: s.initialSequenceNumber,
      });
    }
    return new PipelinedResultPartition({
      ...options,
      minBufferSize: s.minSegmentSize,
      initialSequenceNumber: s.initialSequenceNumber,
    });
  }

  /** The codec of this worker, loaded on first use; `undefined` when compression is off. */
  private getCompressionFactory(): BlockCompressionFactory | undefined {
    if (this.settings.compressionCodec === "NONE") return undefined;
    this.compressionFactory ??= createBlockCompressionFactory(this.settings.compressionCodec);
    return this.compressionFactory;
  }

  /** The worker's batch-shuffle read memory, created with the first blocking partition. */
  private getReadBufferPool(): BatchShuffleReadBufferPool {
    this.readBufferPool ??= new BatchShuffleReadBufferPool(
      this.settings.batchShuffleReadMemoryBytes,
      this.settings.segmentSize,
      this.settings.readBufferRequestTimeoutMs,
    );
    return this.readBufferPool;
  }

  /** Read buffers of blocking partitions free right now and in total (tests and metrics). */
  getReadBufferPoolUsage(): { readonly available: number; readonly total: number } | undefined {
    const pool = this.readBufferPool;
    return pool === undefined
      ? undefined
      : { available: pool.getNumberOfAvailableBuffers(), total: pool.numberOfBuffers };
  }

  createInputGates(
    ownerContext: ShuffleIOOwnerContext,
    partitionProducerStateProvider: PartitionProducerStateProvider,
    descriptors: readonly InputGateDeploymentDescriptor[],
  ): SingleInputGate[] {
    this.checkOpen();
    this.checkRunsTasks(ownerContext);
    const gates = descriptors.map((descriptor, gateIndex) =>
      this.createInputGate(ownerContext, gateIndex, descriptor, partitionProducerStateProvider),
    );
    const key = ownerContext.executionAttemptId.toString();
    if (gates.length > 0) {
      this.gatesByConsumer.set(key, [...(this.gatesByConsumer.get(key) ?? []), ...gates]);
      for (const gate of gates) void gate.closeFuture.then(() => this.forgetGate(key, gate));
    }
    return this.registeringMetrics(ownerContext, gates, registerInputMetrics);
  }

  private createInputGate(
    ownerContext: ShuffleIOOwnerContext,
    gateIndex: number,
    descriptor: InputGateDeploymentDescriptor,
    partitionProducerStateProvider: PartitionProducerStateProvider,
  ): SingleInputGate {
    const { start, end } = descriptor.consumedSubpartitionIndexRange;
    const perDescriptor = end - start + 1;
    const numberOfInputChannels = descriptor.shuffleDescriptors.length * perDescriptor;
    const s = this.settings;
    const spec = createGateBuffersSpec(
      s.maxRequiredBuffersPerGate,
      s.buffersPerChannel,
      s.floatingBuffersPerGate,
      descriptor.consumedPartitionType,
      numberOfInputChannels,
    );
    const factory = descriptor.consumedPartitionType.supportsCompression
      ? this.getCompressionFactory()
      : undefined;
    const poolName = `floating pool of gate ${gateIndex} [${ownerContext.ownerName}]`;
    const fallback = this.buffersFallback.createExclusiveBuffersFallback(spec, poolName);
    const gate = new SingleInputGate({
      owningTaskName: ownerContext.ownerName,
      gateIndex,
      consumedResultId: descriptor.consumedResultId,
      consumedPartitionType: descriptor.consumedPartitionType,
      numberOfInputChannels,
      partitionProducerStateProvider,
      ...(factory === undefined ? {} : { bufferDecompressor: new BufferDecompressor(factory) }),
      ...(s.bufferDebloat === undefined
        ? {}
        : {
            bufferDebloater: new BufferDebloater({
              targetMillis: s.bufferDebloat.targetMillis,
              maxBufferSize: s.segmentSize,
              minBufferSize: s.minSegmentSize,
              thresholdPercentages: s.bufferDebloat.thresholdPercentages,
              numberOfSamples: s.bufferDebloat.samples,
            }),
          }),
      bufferPoolFactory: () =>
        this.networkBufferPool.createBufferPool(
          spec.requiredFloatingBuffers,
          spec.totalFloatingBuffers,
          { name: poolName },
        ),
      ...(fallback === undefined ? {} : { exclusiveBuffersFallback: fallback }),
    });
    let channelIndex = 0;
    for (const shuffleDescriptor of descriptor.shuffleDescriptors) {
      for (let subpartition = start; subpartition <= end; subpartition++) {
        gate.setInputChannel(
          this.createInputChannel(
            gate,
            channelIndex++,
            shuffleDescriptor,
            subpartition,
            spec.exclusiveBuffersPerChannel,
          ),
        );
      }
    }
    return gate;
  }

  private createInputChannel(
    gate: SingleInputGate,
    channelIndex: number,
    descriptor: ShuffleDescriptor,
    subpartitionIndex: number,
    exclusiveBuffers: number,
  ): InputChannel {
    const partitionId = descriptor.resultPartitionId;
    if (isUnknownShuffleDescriptor(descriptor)) {
      return new UnknownInputChannel(
        gate,
        channelIndex,
        partitionId,
        subpartitionIndex,
        this.backoff,
      );
    }
    if (!isNetworkShuffleDescriptor(descriptor)) {
      throw new IllegalArgumentError(
        `shuffle descriptor of kind "${descriptor.kind}" for ${partitionId} was not made by the network shuffle`,
      );
    }
    if (descriptor.producerLocation.equals(this.resourceId)) {
      return new LocalInputChannel(
        gate,
        channelIndex,
        partitionId,
        subpartitionIndex,
        this.partitionProvider,
        this.backoff,
        this.taskEventPublisher,
      );
    }
    const connection = descriptor.connection;
    if (connection.kind !== "remote" || this.clientFactory === undefined) {
      throw new IllegalArgumentError(
        `${partitionId} is produced by worker ${descriptor.producerLocation}, but ` +
          (this.clientFactory === undefined
            ? "this environment runs local-only (no transport)"
            : "its descriptor has no remote address"),
      );
    }
    return new RemoteInputChannel(
      gate,
      channelIndex,
      partitionId,
      subpartitionIndex,
      new ConnectionID(connection.host, connection.port, connection.connectionIndex),
      this.clientFactory,
      this.networkBufferPool,
      exclusiveBuffers,
      this.backoff,
      {
        buffersRequestTimeoutMs: this.settings.buffersRequestTimeoutMs,
        partitionRequestTimeoutMs: this.settings.partitionRequestTimeoutMs,
        initialSequenceNumber: this.settings.initialSequenceNumber,
      },
    );
  }

  /** A gate of consumer attempt `key` closed: it is no longer looked up. */
  private forgetGate(key: string, gate: SingleInputGate): void {
    const open = (this.gatesByConsumer.get(key) ?? []).filter((g) => g !== gate);
    if (open.length > 0) this.gatesByConsumer.set(key, open);
    else this.gatesByConsumer.delete(key);
  }

  /**
   * Makes the unknown channels of `consumerAttemptId`'s gates that read the partition of
   * `partitionInfo` local or remote (Flink's updatePartitionInfo): every matching channel of a
   * gate reading a range of subpartitions, matched by the partition id (the descriptor may name
   * a newer producer attempt). Returns false when no unknown channel reads that partition.
   */
  updatePartitionInfo(
    consumerAttemptId: ExecutionAttemptID,
    partitionInfo: PartitionInfo,
  ): boolean {
    const gates = this.gatesByConsumer.get(consumerAttemptId.toString()) ?? [];
    const descriptor = partitionInfo.shuffleDescriptor;
    const s = this.settings;
    let updated = 0;
    for (const gate of gates) {
      if (!gate.consumedResultId.equals(partitionInfo.intermediateDataSetId)) continue;
      const spec = createGateBuffersSpec(
        s.maxRequiredBuffersPerGate,
        s.buffersPerChannel,
        s.floatingBuffersPerGate,
        gate.consumedPartitionType,
        gate.numberOfInputChannels,
      );
      updated += gate.updateInputChannel(descriptor.resultPartitionId.partitionId, (unknown) =>
        this.createInputChannel(
          gate,
          unknown.channelIndex,
          descriptor,
          unknown.subpartitionIndex,
          spec.exclusiveBuffersPerChannel,
        ),
      );
    }
    return updated > 0;
  }

  releasePartitionsLocally(partitionIds: readonly ResultPartitionID[]): void {
    for (const id of partitionIds) this.resultPartitionManager.releasePartition(id);
  }

  getPartitionsOccupyingLocalResources(): ResultPartitionID[] {
    return this.resultPartitionManager.getUnreleasedPartitions();
  }

  /** Open server-side connections (for tests and metrics). */
  getNumberOfServerConnections(): number {
    return this.serverHandlers.size;
  }

  /**
   * What the data server holds for its peers (for tests and metrics): bytes queued and not yet
   * taken by the sockets, over all connections, and how many peers it stopped reading from
   * because they do not read their replies.
   */
  getServerOutboundStats(): { readonly queuedBytes: number; readonly pausedConnections: number } {
    let queuedBytes = 0;
    let pausedConnections = 0;
    for (const handler of this.serverHandlers) {
      queuedBytes += handler.getQueuedOutboundBytes();
      if (handler.isReadingPaused()) pausedConnections++;
    }
    return { queuedBytes, pausedConnections };
  }

  /**
   * Bytes the data server read from its peers but has not decoded yet, over all connections (for
   * tests and metrics): input that arrived while reading from a peer was paused.
   */
  getServerHeldInputBytes(): number {
    let held = 0;
    for (const handler of this.serverHandlers) held += handler.getHeldInputBytes();
    return held;
  }

  /** Open client connections (for tests and metrics). */
  getNumberOfClientConnections(): number {
    return this.clientFactory?.getNumberOfConnections() ?? 0;
  }

  /**
   * Client connections opened since start (for tests and metrics): a connection kept across
   * jobs counts once however many jobs use it.
   */
  getNumberOfClientConnectionsOpened(): number {
    return this.clientFactory?.getNumberOfConnectionsOpened() ?? 0;
  }

  /**
   * Releases every partition (deleting blocking partitions' files and the worker's folders),
   * closes every connection and the data server, and destroys the NetworkBufferPool and the
   * batch-shuffle read memory. Idempotent. Rejects when a file could not be deleted, after
   * everything else was closed.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.slotProvider?.close();
    this.resultPartitionManager.shutdown();
    this.clientFactory?.shutdown();
    for (const gates of this.gatesByConsumer.values()) {
      for (const gate of gates) await gate.close();
    }
    this.gatesByConsumer.clear();
    const handlers = [...this.serverHandlers, ...this.closedServerHandlers];
    await this.server?.close();
    // Closing the server destroyed its connections, and a destroyed connection still calls back
    // the writes it had queued (with an error); the BufferResponses among them recycle their
    // buffers then. Wait for those, so the pool is whole once close() resolves, whether the
    // socket had written everything (plaintext, mostly) or still held a corked turn (TLS).
    await Promise.all(handlers.map((handler) => handler.whenWritesDone()));
    try {
      await this.fileChannelManager.close();
    } finally {
      this.readBufferPool?.destroy();
      this.networkBufferPool.destroy();
      this.doorbell?.close();
    }
  }

  private checkOpen(): void {
    if (this.closed) throw new IllegalStateError("NetworkShuffleEnvironment is closed");
  }

  /** The main thread of a threaded task manager serves the slots' partitions; tasks run in slots. */
  private checkRunsTasks(ownerContext: ShuffleIOOwnerContext): void {
    if (this.threads?.role === "network") {
      throw new IllegalStateError(
        `${ownerContext.ownerName}: the main thread of a task manager whose slots run on worker threads runs no task`,
      );
    }
  }
}
