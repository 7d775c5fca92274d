import { IntermediateDataSetID } from "@sluice/core";
import { DescriptorError } from "../errors.js";
import type { ResultPartitionType } from "../partition/result-partition-type.js";
import { type DescriptorCodec, defineCodec, type JsonFields, nested } from "./json-fields.js";
import {
  type ShuffleDescriptor,
  ShuffleDescriptorCodec,
  type ShuffleDescriptorJSON,
} from "./shuffle-descriptor.js";

/** An inclusive range of subpartition indexes, `start <= end` (Flink's `IndexRange`). */
export interface IndexRange {
  /** First index, at least 0. */
  readonly start: number;
  /** Last index (inclusive), at least `start`. */
  readonly end: number;
}

/**
 * Everything a worker needs to create one input gate (Flink's `InputGateDeploymentDescriptor`):
 * the consumed data set, its partition type, which subpartitions of each producer partition this
 * consumer reads, and one {@link ShuffleDescriptor} per input channel (one per producer partition,
 * in channel order; unknown descriptors for producers not deployed yet). Passed in a list to
 * `ShuffleEnvironment.createInputGates`.
 */
export interface InputGateDeploymentDescriptor {
  /** The consumed data set. */
  readonly consumedResultId: IntermediateDataSetID;
  /** Its partition type. */
  readonly consumedPartitionType: ResultPartitionType;
  /** Subpartitions read from every producer partition, inclusive (usually one: the subtask index). */
  readonly consumedSubpartitionIndexRange: IndexRange;
  /** One descriptor per input channel; the gate has `shuffleDescriptors.length` channels. */
  readonly shuffleDescriptors: readonly ShuffleDescriptor[];
}

/**
 * Creates a gate deployment descriptor, checking the range and that every channel's partition
 * belongs to the consumed data set.
 *
 * @throws DescriptorError otherwise.
 */
export function createInputGateDeploymentDescriptor(
  consumedResultId: IntermediateDataSetID,
  consumedPartitionType: ResultPartitionType,
  consumedSubpartitionIndexRange: IndexRange,
  shuffleDescriptors: readonly ShuffleDescriptor[],
): InputGateDeploymentDescriptor {
  const { start, end } = consumedSubpartitionIndexRange;
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start) {
    throw new DescriptorError(
      `InputGateDeploymentDescriptor: consumedSubpartitionIndexRange must satisfy 0 <= start <= end, got {start: ${start}, end: ${end}}`,
    );
  }
  if (shuffleDescriptors.length === 0) {
    throw new DescriptorError(
      "InputGateDeploymentDescriptor: shuffleDescriptors must not be empty (a gate has at least one channel)",
    );
  }
  shuffleDescriptors.forEach((descriptor, index) => {
    const dataSet = descriptor.resultPartitionId.partitionId.intermediateDataSetID;
    if (!dataSet.equals(consumedResultId)) {
      throw new DescriptorError(
        `InputGateDeploymentDescriptor: shuffleDescriptors[${index}] belongs to data set ${dataSet}, not to the consumed ${consumedResultId}`,
      );
    }
  });
  return Object.freeze({
    consumedResultId,
    consumedPartitionType,
    consumedSubpartitionIndexRange: Object.freeze({ start, end }),
    shuffleDescriptors: Object.freeze([...shuffleDescriptors]),
  });
}

/**
 * The JSON form (version 1): `{ version, consumedResultId: <hex>, consumedPartitionType: <name>,
 * consumedSubpartitionIndexRange: { start, end }, shuffleDescriptors: [<ShuffleDescriptorJSON>] }`.
 */
export interface InputGateDeploymentDescriptorJSON {
  /** The format version, {@link DESCRIPTOR_VERSION}. */
  readonly version: number;
  /** {@inheritDoc InputGateDeploymentDescriptor.consumedResultId} */
  readonly consumedResultId: string;
  /** {@inheritDoc InputGateDeploymentDescriptor.consumedPartitionType} */
  readonly consumedPartitionType: string;
  /** {@inheritDoc InputGateDeploymentDescriptor.consumedSubpartitionIndexRange} */
  readonly consumedSubpartitionIndexRange: IndexRange;
  /** {@inheritDoc InputGateDeploymentDescriptor.shuffleDescriptors} */
  readonly shuffleDescriptors: readonly ShuffleDescriptorJSON[];
}

function toJSON(descriptor: InputGateDeploymentDescriptor): InputGateDeploymentDescriptorJSON {
  return {
    version: 1,
    consumedResultId: descriptor.consumedResultId.toString(),
    consumedPartitionType: descriptor.consumedPartitionType.name,
    consumedSubpartitionIndexRange: {
      start: descriptor.consumedSubpartitionIndexRange.start,
      end: descriptor.consumedSubpartitionIndexRange.end,
    },
    shuffleDescriptors: descriptor.shuffleDescriptors.map((d) => ShuffleDescriptorCodec.toJSON(d)),
  };
}

function fromFields(fields: JsonFields): InputGateDeploymentDescriptor {
  const consumedResultId = fields.id(
    "consumedResultId",
    "an IntermediateDataSetID (32 hex digits)",
    IntermediateDataSetID.fromHex,
  );
  const consumedPartitionType = fields.partitionType("consumedPartitionType");
  const range = fields.object("consumedSubpartitionIndexRange");
  const start = range.integer("start", 0, 2 ** 31 - 1);
  const end = range.integer("end", start, 2 ** 31 - 1);
  const items = fields.array("shuffleDescriptors");
  const shuffleDescriptors = items.map((item, index) =>
    nested(fields, `shuffleDescriptors[${index}]`, ShuffleDescriptorCodec, item),
  );
  return createInputGateDeploymentDescriptor(
    consumedResultId,
    consumedPartitionType,
    { start, end },
    shuffleDescriptors,
  );
}

/** JSON codec of {@link InputGateDeploymentDescriptor}. */
export const InputGateDeploymentDescriptorCodec: DescriptorCodec<
  InputGateDeploymentDescriptor,
  InputGateDeploymentDescriptorJSON
> = defineCodec("InputGateDeploymentDescriptor", toJSON, fromFields);
