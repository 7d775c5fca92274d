import {
  ExecutionAttemptID,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  JobID,
  type NetworkBuffer,
  type RecordHolder,
  ResourceID,
  SpillingAdaptiveSpanningRecordDeserializer,
} from "@sluice/core";
import {
  createInputGateDeploymentDescriptor,
  createResultPartitionDeploymentDescriptor,
  type NetworkShuffleDescriptor,
  type PartitionDescriptor,
  type PartitionProducerStateProvider,
  ResultPartitionType,
  readableConfigOf,
  type ShuffleDescriptor,
  type ShuffleEnvironmentContext,
} from "@sluice/runtime-api";
import type { SingleInputGate } from "../consumer/single-input-gate.js";
import type { NetworkShuffleEnvironment } from "../environment/network-shuffle-environment.js";
import { NetworkShuffleMaster } from "../environment/network-shuffle-master.js";
import type { ResultPartition } from "../partition/result-partition.js";

/**
 * The unit-test harness of NetworkShuffleEnvironment: the context a worker would give it, and one
 * pipelined partition with one subpartition, read by one gate, created through the environment's
 * SPI methods (the unit under test). Applications deploy through the runtime's TaskExecutor; this
 * package cannot depend on it.
 */
export function unitTestContext(
  config: Record<string, unknown>,
  overrides: Partial<ShuffleEnvironmentContext> = {},
): ShuffleEnvironmentContext {
  return {
    configuration: readableConfigOf(config),
    taskExecutorResourceId: new ResourceID(),
    networkMemorySize: 0,
    localCommunicationOnly: false,
    hostAddress: "127.0.0.1",
    numberOfSlots: 1,
    tmpDirPaths: [],
    ...overrides,
  };
}

/** Every producer is running: consumers keep retrying a partition that is not there yet. */
export const RUNNING_PRODUCER: PartitionProducerStateProvider = {
  requestPartitionProducerState: async () => "RUNNING",
};

/** A partition registered with a master, not yet created in an environment. */
export interface RegisteredPartition {
  readonly partitionDescriptor: PartitionDescriptor;
  readonly shuffleDescriptor: NetworkShuffleDescriptor;
  readonly producerAttempt: ExecutionAttemptID;
}

/** Registers a one-subpartition pipelined partition produced in `env`. */
export async function registerPartition(
  env: NetworkShuffleEnvironment,
): Promise<RegisteredPartition> {
  const master = new NetworkShuffleMaster({
    configuration: readableConfigOf({}),
    onFatalError: (error) => {
      throw error;
    },
  });
  const resultId = new IntermediateDataSetID();
  const partitionDescriptor: PartitionDescriptor = {
    resultId,
    totalNumberOfPartitions: 1,
    partitionId: new IntermediateResultPartitionID(resultId, 0),
    partitionType: ResultPartitionType.PIPELINED_BOUNDED,
    numberOfSubpartitions: 1,
    connectionIndex: 0,
    isBroadcast: false,
    isAllToAllDistribution: true,
  };
  const producerAttempt = new ExecutionAttemptID(undefined, undefined, 0, 0);
  const shuffleDescriptor = await master.registerPartitionWithProducer(
    new JobID(),
    partitionDescriptor,
    {
      producerLocation: env.resourceId,
      producerExecutionId: producerAttempt,
      address: "127.0.0.1",
      dataPort: env.getDataPort(),
    },
  );
  return { partitionDescriptor, shuffleDescriptor, producerAttempt };
}

/** Creates the writer of a registered partition in `env`, owned by `owner` (not set up). */
export function createWriter(
  env: NetworkShuffleEnvironment,
  partition: RegisteredPartition,
  owner = env.createShuffleIOOwnerContext("producer", partition.producerAttempt),
): ResultPartition {
  const [writer] = env.createResultPartitionWriters(owner, [
    createResultPartitionDeploymentDescriptor(
      partition.partitionDescriptor,
      partition.shuffleDescriptor,
      128,
    ),
  ]);
  return writer as ResultPartition;
}

/** Creates a gate in `env` that reads subpartition 0 of `descriptor`'s partition (not set up). */
export function createGate(
  env: NetworkShuffleEnvironment,
  descriptor: ShuffleDescriptor,
  owner = env.createShuffleIOOwnerContext("consumer", new ExecutionAttemptID()),
): SingleInputGate {
  const resultId = descriptor.resultPartitionId.partitionId.intermediateDataSetID;
  const [gate] = env.createInputGates(owner, RUNNING_PRODUCER, [
    createInputGateDeploymentDescriptor(
      resultId,
      ResultPartitionType.PIPELINED_BOUNDED,
      { start: 0, end: 0 },
      [descriptor],
    ),
  ]);
  return gate as SingleInputGate;
}

/** A record of `size` bytes whose content identifies `seq`. */
export function testRecord(seq: number, size: number): Uint8Array {
  const record = Buffer.alloc(Math.max(4, size));
  record.writeInt32BE(seq, 0);
  for (let i = 4; i < record.length; i++) record[i] = (seq + i) & 0xff;
  return record;
}

/** Checks that the records of one channel arrive as 0, 1, 2, … (see {@link testRecord}). */
export class SequenceChecker {
  /** The sequence number expected next: the number of records received so far. */
  next = 0;
  private readonly deserializer = new SpillingAdaptiveSpanningRecordDeserializer();
  private readonly holder: RecordHolder<Uint8Array> = { value: undefined };

  /** Consumes one buffer of the channel (takes ownership of it). */
  accept(buffer: NetworkBuffer): void {
    this.deserializer.setNextBuffer(buffer);
    for (;;) {
      const result = this.deserializer.getNextRecordBytes(this.holder);
      if (result.isFullRecord()) {
        const record = this.holder.value as Uint8Array;
        const seq = Buffer.from(record.buffer, record.byteOffset, record.byteLength).readInt32BE(0);
        if (seq !== this.next) throw new Error(`expected record ${this.next}, got ${seq}`);
        this.next++;
      }
      if (result.isBufferConsumed()) return;
    }
  }

  /** True when the channel stopped in the middle of a record. */
  hasUnfinishedData(): boolean {
    return this.deserializer.hasUnfinishedData();
  }
}
