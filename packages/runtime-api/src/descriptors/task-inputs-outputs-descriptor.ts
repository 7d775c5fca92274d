import type { ResultPartitionType } from "../partition/result-partition-type.js";
import { type DescriptorCodec, defineCodec, type JsonFields } from "./json-fields.js";

/**
 * The shape of a task's inputs and outputs (Flink's `TaskInputsOutputsDescriptor`), the input of
 * `ShuffleMaster.computeShuffleMemorySizeForTask`. Maps are keyed by the data set's
 * IntermediateDataSetID as 32 hex digits.
 */
export interface TaskInputsOutputsDescriptor {
  /** Number of input gates of the task. */
  readonly inputGateNums: number;
  /** Input channels per consumed data set. */
  readonly inputChannelNums: Readonly<Record<string, number>>;
  /** How many times each consumed partition is read by this task (partition reuse). */
  readonly partitionReuseCount: Readonly<Record<string, number>>;
  /** Subpartitions per produced data set. */
  readonly subpartitionNums: Readonly<Record<string, number>>;
  /** Partition type per consumed data set. */
  readonly inputPartitionTypes: Readonly<Record<string, ResultPartitionType>>;
  /** Partition type per produced data set. */
  readonly partitionTypes: Readonly<Record<string, ResultPartitionType>>;
}

/** The JSON form (version 1): the same counts and maps, partition types by name. */
export interface TaskInputsOutputsDescriptorJSON
  extends Omit<TaskInputsOutputsDescriptor, "inputPartitionTypes" | "partitionTypes"> {
  /** The format version, {@link DESCRIPTOR_VERSION}. */
  readonly version: number;
  /** {@inheritDoc TaskInputsOutputsDescriptor.inputPartitionTypes} */
  readonly inputPartitionTypes: Readonly<Record<string, string>>;
  /** {@inheritDoc TaskInputsOutputsDescriptor.partitionTypes} */
  readonly partitionTypes: Readonly<Record<string, string>>;
}

const DATA_SET_HEX = /^[0-9a-f]{32}$/;

function mapValues<A, B>(
  record: Readonly<Record<string, A>>,
  f: (value: A) => B,
): Record<string, B> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, f(value)]));
}

function toJSON(descriptor: TaskInputsOutputsDescriptor): TaskInputsOutputsDescriptorJSON {
  return {
    version: 1,
    inputGateNums: descriptor.inputGateNums,
    inputChannelNums: { ...descriptor.inputChannelNums },
    partitionReuseCount: { ...descriptor.partitionReuseCount },
    subpartitionNums: { ...descriptor.subpartitionNums },
    inputPartitionTypes: mapValues(descriptor.inputPartitionTypes, (type) => type.name),
    partitionTypes: mapValues(descriptor.partitionTypes, (type) => type.name),
  };
}

function readMap<V>(
  fields: JsonFields,
  field: string,
  read: (entry: JsonFields, key: string) => V,
) {
  const map = fields.object(field);
  const result: Record<string, V> = {};
  for (const key of Object.keys(fields.raw(field) as object)) {
    if (!DATA_SET_HEX.test(key)) {
      fields.fail(field, "must be keyed by IntermediateDataSetIDs (32 lowercase hex digits)", key);
    }
    result[key] = read(map, key);
  }
  return Object.freeze(result);
}

function fromFields(fields: JsonFields): TaskInputsOutputsDescriptor {
  const count = (entry: JsonFields, key: string) => entry.integer(key, 0, 2 ** 31 - 1);
  const type = (entry: JsonFields, key: string) => entry.partitionType(key);
  return Object.freeze({
    inputGateNums: fields.integer("inputGateNums", 0, 2 ** 31 - 1),
    inputChannelNums: readMap(fields, "inputChannelNums", count),
    partitionReuseCount: readMap(fields, "partitionReuseCount", count),
    subpartitionNums: readMap(fields, "subpartitionNums", count),
    inputPartitionTypes: readMap(fields, "inputPartitionTypes", type),
    partitionTypes: readMap(fields, "partitionTypes", type),
  });
}

/** JSON codec of {@link TaskInputsOutputsDescriptor}. */
export const TaskInputsOutputsDescriptorCodec: DescriptorCodec<
  TaskInputsOutputsDescriptor,
  TaskInputsOutputsDescriptorJSON
> = defineCodec("TaskInputsOutputsDescriptor", toJSON, fromFields);
