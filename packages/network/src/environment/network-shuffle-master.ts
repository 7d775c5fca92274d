import { type JobID, ResultPartitionID } from "@sluice/core";
import {
  createNetworkShuffleDescriptor,
  type JobShuffleContext,
  type NetworkShuffleDescriptor,
  type PartitionDescriptor,
  type ProducerDescriptor,
  type ShuffleMaster,
  type ShuffleMasterContext,
  type TaskInputsOutputsDescriptor,
} from "@sluice/runtime-api";
import {
  configuredOutputPoolSize,
  createGateBuffersSpec,
  targetBuffersPerGate,
} from "./gate-buffers-spec.js";
import {
  type NetworkShuffleEnvironmentConfiguration,
  readNetworkShuffleEnvironmentConfiguration,
} from "./network-shuffle-environment-configuration.js";

/**
 * The coordinator side of the bundled network shuffle (Flink's NettyShuffleMaster). Partitions
 * live in their producer's memory, so registering one only computes how consumers reach it:
 * the producer's worker, data address and port, and the connection index.
 */
export class NetworkShuffleMaster implements ShuffleMaster<NetworkShuffleDescriptor> {
  private readonly settings: NetworkShuffleEnvironmentConfiguration;
  private readonly jobs = new Map<string, JobShuffleContext>();

  constructor(context: ShuffleMasterContext) {
    this.settings = readNetworkShuffleEnvironmentConfiguration(context.configuration);
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.jobs.clear();
  }

  registerJob(context: JobShuffleContext): void {
    this.jobs.set(context.jobId.toString(), context);
  }

  unregisterJob(jobId: JobID): void {
    this.jobs.delete(jobId.toString());
  }

  async registerPartitionWithProducer(
    _jobId: JobID,
    partitionDescriptor: PartitionDescriptor,
    producerDescriptor: ProducerDescriptor,
  ): Promise<NetworkShuffleDescriptor> {
    const resultPartitionId = new ResultPartitionID(
      partitionDescriptor.partitionId,
      producerDescriptor.producerExecutionId,
    );
    // A negative data port means the producer's worker runs without a data server (local only).
    const connection =
      producerDescriptor.dataPort >= 0
        ? {
            kind: "remote" as const,
            host: producerDescriptor.address,
            port: producerDescriptor.dataPort,
            connectionIndex: partitionDescriptor.connectionIndex,
          }
        : { kind: "local" as const };
    return createNetworkShuffleDescriptor(
      resultPartitionId,
      producerDescriptor.producerLocation,
      connection,
    );
  }

  /**
   * A no-op, as Flink's NettyShuffleMaster: the network shuffle keeps every partition in its
   * producer's worker — pipelined ones in memory, blocking ones in files under that worker's
   * `io.tmp.dirs` — and nothing outside it. The descriptor's `storesLocalResourcesOn` names that
   * worker, and the scheduler frees the data there with
   * `ShuffleEnvironment.releasePartitionsLocally`, which deletes a blocking partition's files.
   */
  releasePartitionExternally(_shuffleDescriptor: NetworkShuffleDescriptor): void {}

  /**
   * Network memory a task announces, in bytes: its pools' targets, not their minimums (Flink's
   * `computeNetworkBuffersForAnnouncing`, FLINK-12852). Each gate counts N·bpc + floating, as its
   * floating buffers may be held by back-pressure and not come back in time; a data set the task
   * reads through several gates (`partitionReuseCount`) counts once per gate. A pipelined bounded
   * partition counts its maximum, N·bpc + floating, for the same reason; a blocking one its
   * minimum, since it is free of back-pressure and its buffers return quickly. An unbounded
   * pipelined pool has no finite target and counts its minimum. A produced partition is written
   * once however many consumers read it.
   */
  computeShuffleMemorySizeForTask(descriptor: TaskInputsOutputsDescriptor): number {
    const s = this.settings;
    let buffers = 0;
    for (const [resultId, channels] of Object.entries(descriptor.inputChannelNums)) {
      const type = descriptor.inputPartitionTypes[resultId];
      if (type === undefined) continue;
      const spec = createGateBuffersSpec(
        s.maxRequiredBuffersPerGate,
        s.buffersPerChannel,
        s.floatingBuffersPerGate,
        type,
        channels,
      );
      const gates = descriptor.partitionReuseCount[resultId] ?? 1;
      buffers += gates * targetBuffersPerGate(spec, channels);
    }
    for (const [resultId, subpartitions] of Object.entries(descriptor.subpartitionNums)) {
      const type = descriptor.partitionTypes[resultId];
      if (type === undefined) continue;
      const { min, max } = configuredOutputPoolSize(s, subpartitions, type);
      buffers += type.isPipelined && type.isBounded ? max : min;
    }
    return buffers * s.segmentSize;
  }
}
