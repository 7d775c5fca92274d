import { IntermediateDataSetID, IntermediateResultPartitionID } from "@sluice/core";
import type { ResultPartitionType } from "../partition/result-partition-type.js";
import { type DescriptorCodec, defineCodec, type JsonFields } from "./json-fields.js";

/**
 * What the scheduler knows about one partition when it registers it with the `ShuffleMaster`
 * (Flink's `PartitionDescriptor`): which data set, which partition, its type and fan-out. Passed
 * to `ShuffleMaster.registerPartitionWithProducer` and carried to the producer in its
 * `ResultPartitionDeploymentDescriptor`. Plain, immutable data.
 */
export interface PartitionDescriptor {
  /** The data set (all partitions of one producing operator's output). */
  readonly resultId: IntermediateDataSetID;
  /** How many partitions the data set has (the producer's parallelism), at least 1. */
  readonly totalNumberOfPartitions: number;
  /** This partition: `resultId` plus the partition number, below `totalNumberOfPartitions`. */
  readonly partitionId: IntermediateResultPartitionID;
  /** The partition's type. */
  readonly partitionType: ResultPartitionType;
  /** How many subpartitions (one per consumer subtask, usually), at least 1. */
  readonly numberOfSubpartitions: number;
  /** Index of the connection consumers use (partitions with equal index share a connection). */
  readonly connectionIndex: number;
  /** True when every record goes to every subpartition. */
  readonly isBroadcast: boolean;
  /** True when every consumer reads every partition of the data set (all-to-all edge). */
  readonly isAllToAllDistribution: boolean;
  /**
   * True when the number of consumers is not known at registration (adaptive scheduling; Flink
   * 2.0). Omitted means false.
   */
  readonly isNumberOfPartitionConsumerUndefined?: boolean;
}

/**
 * The JSON form of a {@link PartitionDescriptor} (version 1): ids as strings (data set: 32 hex
 * digits; partition: `<dataSetHex>#<n>`), the type by name.
 */
export interface PartitionDescriptorJSON {
  /** The format version, {@link DESCRIPTOR_VERSION}. */
  readonly version: number;
  /** {@inheritDoc PartitionDescriptor.resultId} */
  readonly resultId: string;
  /** {@inheritDoc PartitionDescriptor.totalNumberOfPartitions} */
  readonly totalNumberOfPartitions: number;
  /** {@inheritDoc PartitionDescriptor.partitionId} */
  readonly partitionId: string;
  /** {@inheritDoc PartitionDescriptor.partitionType} */
  readonly partitionType: string;
  /** {@inheritDoc PartitionDescriptor.numberOfSubpartitions} */
  readonly numberOfSubpartitions: number;
  /** {@inheritDoc PartitionDescriptor.connectionIndex} */
  readonly connectionIndex: number;
  /** {@inheritDoc PartitionDescriptor.isBroadcast} */
  readonly isBroadcast: boolean;
  /** {@inheritDoc PartitionDescriptor.isAllToAllDistribution} */
  readonly isAllToAllDistribution: boolean;
  /** {@inheritDoc PartitionDescriptor.isNumberOfPartitionConsumerUndefined} */
  readonly isNumberOfPartitionConsumerUndefined?: boolean;
}

const MAX_INT = 2 ** 31 - 1;

function toJSON(descriptor: PartitionDescriptor): PartitionDescriptorJSON {
  const json: PartitionDescriptorJSON = {
    version: 1,
    resultId: descriptor.resultId.toString(),
    totalNumberOfPartitions: descriptor.totalNumberOfPartitions,
    partitionId: descriptor.partitionId.toString(),
    partitionType: descriptor.partitionType.name,
    numberOfSubpartitions: descriptor.numberOfSubpartitions,
    connectionIndex: descriptor.connectionIndex,
    isBroadcast: descriptor.isBroadcast,
    isAllToAllDistribution: descriptor.isAllToAllDistribution,
  };
  return descriptor.isNumberOfPartitionConsumerUndefined === undefined
    ? json
    : {
        ...json,
        isNumberOfPartitionConsumerUndefined: descriptor.isNumberOfPartitionConsumerUndefined,
      };
}

function fromFields(fields: JsonFields): PartitionDescriptor {
  const resultId = fields.id(
    "resultId",
    "an IntermediateDataSetID (32 hex digits)",
    IntermediateDataSetID.fromHex,
  );
  const totalNumberOfPartitions = fields.integer("totalNumberOfPartitions", 1, MAX_INT);
  const partitionId = fields.id(
    "partitionId",
    "an IntermediateResultPartitionID (<dataSetHex>#<n>)",
    IntermediateResultPartitionID.parse,
  );
  if (!partitionId.intermediateDataSetID.equals(resultId)) {
    fields.fail("partitionId", `must belong to data set ${resultId}`, partitionId.toString());
  }
  if (partitionId.partitionNum >= totalNumberOfPartitions) {
    fields.fail(
      "partitionId",
      `must have a partition number below totalNumberOfPartitions (${totalNumberOfPartitions})`,
      partitionId.toString(),
    );
  }
  const descriptor: PartitionDescriptor = {
    resultId,
    totalNumberOfPartitions,
    partitionId,
    partitionType: fields.partitionType("partitionType"),
    numberOfSubpartitions: fields.integer("numberOfSubpartitions", 1, MAX_INT),
    connectionIndex: fields.integer("connectionIndex", 0, MAX_INT),
    isBroadcast: fields.boolean("isBroadcast"),
    isAllToAllDistribution: fields.boolean("isAllToAllDistribution"),
  };
  return Object.freeze(
    fields.has("isNumberOfPartitionConsumerUndefined")
      ? {
          ...descriptor,
          isNumberOfPartitionConsumerUndefined: fields.boolean(
            "isNumberOfPartitionConsumerUndefined",
          ),
        }
      : descriptor,
  );
}

/** JSON codec of {@link PartitionDescriptor} (format: {@link PartitionDescriptorJSON}). */
export const PartitionDescriptorCodec: DescriptorCodec<
  PartitionDescriptor,
  PartitionDescriptorJSON
> = defineCodec("PartitionDescriptor", toJSON, fromFields);
