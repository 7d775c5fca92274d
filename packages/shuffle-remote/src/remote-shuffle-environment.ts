import { type ExecutionAttemptID, ResourceID, type ResultPartitionID } from "@sluice/core";
import {
  type NetworkShuffleEnvironment,
  readTlsSettings,
  registerOutputMetrics,
} from "@sluice/network/plugin";
import {
  createInputGateDeploymentDescriptor,
  createNetworkShuffleDescriptor,
  createPartitionInfo,
  type InputGateDeploymentDescriptor,
  isUnknownShuffleDescriptor,
  NettyShuffleEnvironmentOptions,
  NetworkMemoryOptions,
  type PartitionInfo,
  type PartitionProducerStateProvider,
  type ResultPartitionDeploymentDescriptor,
  type ShuffleDescriptor,
  type ShuffleEnvironment,
  type ShuffleEnvironmentContext,
  type ShuffleIOOwnerContext,
  type ShuffleMetricSink,
} from "@sluice/runtime-api";
import { TcpShuffleServiceFactory, TcpTransport } from "@sluice/shuffle-tcp";
import { checkBlocking } from "./check-blocking.js";
import { readRpcLimits } from "./frame-server.js";
import { type RemoteChannelSlot, RemoteInputGate } from "./remote-input-gate.js";
import { RemoteResultPartitionWriter } from "./remote-result-partition-writer.js";
import { accessOf, workerOf } from "./remote-shuffle-descriptor.js";
import { RemoteShuffleOptions } from "./remote-shuffle-options.js";
import { WorkerStatClient } from "./worker-stat-client.js";

/**
 * The task manager side of the remote shuffle: writers that push each partition to the shuffle
 * worker its descriptor names, and gates that read partitions from the workers with the network
 * shuffle's gates (credit-based flow control, the task manager's network memory), checking each
 * subpartition's CRC32 and byte count at its end. Nothing is stored in the task manager, so it
 * reports no partitions occupying local resources and can go away once its tasks ended.
 */
export class RemoteShuffleEnvironment
  implements ShuffleEnvironment<RemoteResultPartitionWriter, RemoteInputGate>
{
  /** The network shuffle's environment, for the gates (its data server serves nothing). */
  readonly network: NetworkShuffleEnvironment;
  private readonly transport: TcpTransport;
  private readonly stat: WorkerStatClient;
  private readonly gatesByConsumer = new Map<string, RemoteInputGate[]>();
  private readonly connectTimeoutMs: number;

  constructor(private readonly context: ShuffleEnvironmentContext) {
    this.network = new TcpShuffleServiceFactory().createShuffleEnvironment({
      ...context,
      // Gates connect to the workers' data ports: this environment needs no server of its own.
      localCommunicationOnly: false,
    });
    this.transport = new TcpTransport({ tls: readTlsSettings(context.configuration) });
    this.connectTimeoutMs = context.configuration.get(
      NettyShuffleEnvironmentOptions.CLIENT_CONNECT_TIMEOUT,
    );
    const limits = readRpcLimits(context.configuration);
    this.stat = new WorkerStatClient(this.transport, {
      connectTimeoutMs: this.connectTimeoutMs,
      maxMessageSize: limits.maxMessageSize,
      idleCloseMs: Math.max(1, Math.floor(limits.idleConnectionTimeoutMs / 2)),
    });
  }

  start(): Promise<number> {
    return this.network.start();
  }

  createShuffleIOOwnerContext(
    ownerName: string,
    executionAttemptId: ExecutionAttemptID,
    metrics?: ShuffleMetricSink,
  ): ShuffleIOOwnerContext {
    return this.network.createShuffleIOOwnerContext(ownerName, executionAttemptId, metrics);
  }

  createResultPartitionWriters(
    ownerContext: ShuffleIOOwnerContext,
    descriptors: readonly ResultPartitionDeploymentDescriptor[],
  ): RemoteResultPartitionWriter[] {
    const configuration = this.context.configuration;
    const writers = descriptors.map((deployment) => {
      checkBlocking(
        deployment.partitionDescriptor.partitionType,
        `${ownerContext.ownerName}: partition ${deployment.shuffleDescriptor.resultPartitionId}`,
      );
      return new RemoteResultPartitionWriter({
        owningTaskName: ownerContext.ownerName,
        deployment,
        transport: this.transport,
        connectTimeoutMs: this.connectTimeoutMs,
        chunkSize: configuration.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE),
        memoryPerPartition: configuration.get(RemoteShuffleOptions.MEMORY_PER_PARTITION),
        maxRecordSize: configuration.get(NettyShuffleEnvironmentOptions.MAX_RECORD_SIZE),
      });
    });
    // Flink's names (numBytesOut, outputQueueLength, ...), so dashboards work unchanged.
    if (ownerContext.metrics !== undefined) registerOutputMetrics(ownerContext.metrics, writers);
    return writers;
  }

  createInputGates(
    ownerContext: ShuffleIOOwnerContext,
    partitionProducerStateProvider: PartitionProducerStateProvider,
    descriptors: readonly InputGateDeploymentDescriptor[],
  ): RemoteInputGate[] {
    for (const descriptor of descriptors) {
      checkBlocking(
        descriptor.consumedPartitionType,
        `${ownerContext.ownerName}: input of data set ${descriptor.consumedResultId}`,
      );
    }
    const inner = this.network.createInputGates(
      ownerContext,
      partitionProducerStateProvider,
      descriptors.map((descriptor) =>
        createInputGateDeploymentDescriptor(
          descriptor.consumedResultId,
          descriptor.consumedPartitionType,
          descriptor.consumedSubpartitionIndexRange,
          descriptor.shuffleDescriptors.map(toNetworkDescriptor),
        ),
      ),
    );
    const gates = inner.map((gate, index) => {
      const descriptor = descriptors[index] as InputGateDeploymentDescriptor;
      const { start, end } = descriptor.consumedSubpartitionIndexRange;
      const slots: RemoteChannelSlot[] = [];
      for (const shuffleDescriptor of descriptor.shuffleDescriptors) {
        const known = !isUnknownShuffleDescriptor(shuffleDescriptor);
        for (let subpartition = start; subpartition <= end; subpartition++) {
          slots.push({
            partitionKey: shuffleDescriptor.resultPartitionId.partitionId.toString(),
            subpartition,
            partitionId: known ? shuffleDescriptor.resultPartitionId : undefined,
            worker: known ? workerOf(shuffleDescriptor) : undefined,
            access: known ? accessOf(shuffleDescriptor) : undefined,
          });
        }
      }
      return new RemoteInputGate(gate, slots, this.stat, ownerContext.ownerName);
    });
    const key = ownerContext.executionAttemptId.toString();
    this.gatesByConsumer.set(key, [...(this.gatesByConsumer.get(key) ?? []), ...gates]);
    return gates;
  }

  updatePartitionInfo(
    consumerAttemptId: ExecutionAttemptID,
    partitionInfo: PartitionInfo,
  ): boolean {
    const descriptor = partitionInfo.shuffleDescriptor;
    const worker = workerOf(descriptor);
    const access = accessOf(descriptor);
    for (const gate of this.gatesByConsumer.get(consumerAttemptId.toString()) ?? []) {
      gate.onPartitionKnown(descriptor.resultPartitionId, worker, access);
    }
    return this.network.updatePartitionInfo(
      consumerAttemptId,
      createPartitionInfo(partitionInfo.intermediateDataSetId, toNetworkDescriptor(descriptor)),
    );
  }

  /** Nothing to free here: the partitions live on the shuffle workers. */
  releasePartitionsLocally(_partitionIds: readonly ResultPartitionID[]): void {}

  /** Always empty: this task manager stores no partition. */
  getPartitionsOccupyingLocalResources(): ResultPartitionID[] {
    return [];
  }

  async close(): Promise<void> {
    this.stat.close();
    this.gatesByConsumer.clear();
    await this.network.close();
  }
}

/**
 * How the network shuffle's gate reads a partition stored on a worker: from the worker's data
 * port, the worker's incarnation standing in for the producer's location (never this task
 * manager, so the gate never reads it locally).
 */
function toNetworkDescriptor(descriptor: ShuffleDescriptor): ShuffleDescriptor {
  if (isUnknownShuffleDescriptor(descriptor)) return descriptor;
  const worker = workerOf(descriptor);
  return createNetworkShuffleDescriptor(
    descriptor.resultPartitionId,
    ResourceID.fromHex(worker.incarnation),
    { kind: "remote", host: worker.host, port: worker.dataPort, connectionIndex: 0 },
  );
}
