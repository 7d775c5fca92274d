import {
  type ExecutionAttemptID,
  IllegalArgumentError,
  IllegalStateError,
  NetworkBufferPool,
  type ResourceID,
  type ResultPartitionID,
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
} from "@sluice/runtime-api";
import type { Backoff, InputChannel } from "../consumer/input-channel.js";
import { LocalInputChannel } from "../consumer/local-input-channel.js";
import { RemoteInputChannel } from "../consumer/remote-input-channel.js";
import { SingleInputGate } from "../consumer/single-input-gate.js";
import { UnknownInputChannel } from "../consumer/unknown-input-channel.js";
import {
  registerEnvironmentMetrics,
  registerInputMetrics,
  registerOutputMetrics,
} from "../metrics/shuffle-metrics.js";
import { ConnectionID } from "../netty/connection-id.js";
import { PartitionRequestClientFactory } from "../netty/partition-request-client-factory.js";
import { PartitionRequestServerHandler } from "../netty/partition-request-server-handler.js";
import type { Transport, TransportServer } from "../netty/transport.js";
import { emitTransportWarning } from "../netty/transport-warning.js";
import { ResultPartition } from "../partition/result-partition.js";
import { ResultPartitionManager } from "../partition/result-partition-manager.js";
import { TaskEventDispatcher } from "../partition/task-event-publisher.js";
import { createGateBuffersSpec, outputPoolSize } from "./gate-buffers-spec.js";
import {
  type NetworkShuffleEnvironmentConfiguration,
  readNetworkShuffleEnvironmentConfiguration,
} from "./network-shuffle-environment-configuration.js";

/**
 * One worker's shuffle (Flink's NettyShuffleEnvironment): its NetworkBufferPool, the registry of
 * the partitions it produces, the data server that serves them to other workers, and the
 * connections to other workers' data servers. Writers and gates for the worker's tasks are
 * created here from deployment descriptors. With no transport it runs local-only (`start()`
 * returns -1).
 */
export class NetworkShuffleEnvironment
  implements ShuffleEnvironment<ResultPartition, SingleInputGate>
{
  readonly resourceId: ResourceID;
  readonly settings: NetworkShuffleEnvironmentConfiguration;
  readonly networkBufferPool: NetworkBufferPool;
  readonly resultPartitionManager = new ResultPartitionManager();
  /** Subscriptions for task events sent upstream by consumers (when the worker brings none). */
  readonly taskEventDispatcher = new TaskEventDispatcher();
  /** Where task events go: the worker's publisher from the context, else our dispatcher. */
  private readonly taskEventPublisher: TaskEventPublisher;
  private readonly transport: Transport | undefined;
  private readonly clientFactory: PartitionRequestClientFactory | undefined;
  private server: TransportServer | undefined;
  private readonly serverHandlers = new Set<PartitionRequestServerHandler>();
  /** Gates by consumer attempt, for updatePartitionInfo. */
  private readonly gatesByConsumer = new Map<string, SingleInputGate[]>();
  private readonly backoff: Backoff;
  private started = false;
  private closed = false;

  constructor(context: ShuffleEnvironmentContext, transport?: Transport) {
    this.resourceId = context.taskExecutorResourceId;
    this.settings = readNetworkShuffleEnvironmentConfiguration(
      context.configuration,
      context.networkMemorySize,
    );
    this.networkBufferPool = NetworkBufferPool.fromMemorySize(
      this.settings.networkMemoryBytes,
      this.settings.segmentSize,
    );
    this.transport = context.localCommunicationOnly ? undefined : transport;
    this.taskEventPublisher = context.taskEventPublisher ?? this.taskEventDispatcher;
    this.backoff = {
      initialMs: this.settings.requestBackoffInitialMs,
      maxMs: this.settings.requestBackoffMaxMs,
    };
    if (context.metrics !== undefined)
      registerEnvironmentMetrics(context.metrics, this.networkBufferPool);
    if (this.transport !== undefined) {
      this.clientFactory = new PartitionRequestClientFactory(this.transport, {
        connectTimeoutMs: this.settings.connectTimeoutMs,
        retries: this.settings.retries,
        maxFrameSize: this.settings.maxFrameSize,
      });
    }
  }

  /** Starts the data server; returns its port, or -1 when running local-only. */
  async start(): Promise<number> {
    if (this.started) throw new IllegalStateError("NetworkShuffleEnvironment already started");
    this.started = true;
    const transport = this.transport;
    if (transport === undefined) return -1;
    this.server = await transport.listen({
      host: this.settings.bindHost,
      port: this.settings.dataPort,
      maxFrameSize: this.settings.maxFrameSize,
      onConnection: (connection) => {
        if (this.closed) {
          connection.destroy();
          return;
        }
        const handler = new PartitionRequestServerHandler(
          connection,
          this.resultPartitionManager,
          this.taskEventPublisher,
          {
            maxFrameSize: this.settings.maxFrameSize,
            partitionRequestTimeoutMs: this.settings.partitionRequestTimeoutMs,
            maxPartitionRequestsPerConnection: this.settings.maxPartitionRequestsPerConnection,
            onClosed: (closed) => this.serverHandlers.delete(closed),
          },
        );
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
  ): ResultPartition[] {
    this.checkOpen();
    const partitions = descriptors.map((descriptor, index) => {
      const { partitionDescriptor, shuffleDescriptor } = descriptor;
      const type = partitionDescriptor.partitionType;
      if (!type.isPipelined) {
        throw new IllegalArgumentError(
          `${ownerContext.ownerName}: partition type ${type.name} is not supported by the network shuffle yet (pipelined only)`,
        );
      }
      const numberOfSubpartitions = partitionDescriptor.numberOfSubpartitions;
      const s = this.settings;
      const { min, max } = outputPoolSize(
        numberOfSubpartitions,
        s.buffersPerChannel,
        s.floatingBuffersPerGate,
        type,
      );
      const partitionId = shuffleDescriptor.resultPartitionId;
      return new ResultPartition({
        owningTaskName: ownerContext.ownerName,
        partitionIndex: index,
        partitionId,
        partitionType: type,
        numberOfSubpartitions,
        partitionManager: this.resultPartitionManager,
        maxRecordSize: s.maxRecordSize,
        bufferPoolFactory: () =>
          this.networkBufferPool.createBufferPool(min, max, {
            numberOfSubpartitions,
            maxBuffersPerChannel: s.maxBuffersPerChannel,
            maxOverdraftBuffersPerGate: s.maxOverdraftBuffersPerGate,
            name: `output pool of ${partitionId} [${ownerContext.ownerName}]`,
          }),
      });
    });
    if (ownerContext.metrics !== undefined) registerOutputMetrics(ownerContext.metrics, partitions);
    return partitions;
  }

  createInputGates(
    ownerContext: ShuffleIOOwnerContext,
    partitionProducerStateProvider: PartitionProducerStateProvider,
    descriptors: readonly InputGateDeploymentDescriptor[],
  ): SingleInputGate[] {
    this.checkOpen();
    const gates = descriptors.map((descriptor, gateIndex) =>
      this.createInputGate(ownerContext, gateIndex, descriptor, partitionProducerStateProvider),
    );
    const key = ownerContext.executionAttemptId.toString();
    this.gatesByConsumer.set(key, [...(this.gatesByConsumer.get(key) ?? []), ...gates]);
    if (ownerContext.metrics !== undefined) registerInputMetrics(ownerContext.metrics, gates);
    return gates;
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
    const gate = new SingleInputGate({
      owningTaskName: ownerContext.ownerName,
      gateIndex,
      consumedResultId: descriptor.consumedResultId,
      consumedPartitionType: descriptor.consumedPartitionType,
      numberOfInputChannels,
      partitionProducerStateProvider,
      bufferPoolFactory: () =>
        this.networkBufferPool.createBufferPool(
          spec.requiredFloatingBuffers,
          spec.totalFloatingBuffers,
          { name: `floating pool of gate ${gateIndex} [${ownerContext.ownerName}]` },
        ),
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
        this.resultPartitionManager,
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
    );
  }

  updatePartitionInfo(
    consumerAttemptId: ExecutionAttemptID,
    partitionInfo: PartitionInfo,
  ): boolean {
    const gates = this.gatesByConsumer.get(consumerAttemptId.toString()) ?? [];
    const descriptor = partitionInfo.shuffleDescriptor;
    const s = this.settings;
    for (const gate of gates) {
      if (!gate.consumedResultId.equals(partitionInfo.intermediateDataSetId)) continue;
      const spec = createGateBuffersSpec(
        s.maxRequiredBuffersPerGate,
        s.buffersPerChannel,
        s.floatingBuffersPerGate,
        gate.consumedPartitionType,
        gate.numberOfInputChannels,
      );
      const updated = gate.updateInputChannel(descriptor.resultPartitionId, (unknown) =>
        this.createInputChannel(
          gate,
          unknown.channelIndex,
          descriptor,
          unknown.subpartitionIndex,
          spec.exclusiveBuffersPerChannel,
        ),
      );
      if (updated) return true;
    }
    return false;
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

  /** Open client connections (for tests and metrics). */
  getNumberOfClientConnections(): number {
    return this.clientFactory?.getNumberOfConnections() ?? 0;
  }

  /**
   * Releases every partition, closes every connection and the data server, and destroys the
   * NetworkBufferPool. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.resultPartitionManager.shutdown();
    this.clientFactory?.shutdown();
    for (const gates of this.gatesByConsumer.values()) {
      for (const gate of gates) await gate.close();
    }
    this.gatesByConsumer.clear();
    await this.server?.close();
    this.networkBufferPool.destroy();
  }

  private checkOpen(): void {
    if (this.closed) throw new IllegalStateError("NetworkShuffleEnvironment is closed");
  }
}
