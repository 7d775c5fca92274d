import { IntermediateDataSetID } from "@sluice/core";
import { DescriptorError } from "../errors.js";
import { type DescriptorCodec, defineCodec, type JsonFields, nested } from "./json-fields.js";
import {
  type ShuffleDescriptor,
  ShuffleDescriptorCodec,
  type ShuffleDescriptorJSON,
} from "./shuffle-descriptor.js";

/**
 * The now-known location of a partition a consumer already waits for (Flink's `PartitionInfo`):
 * sent by the coordinator to a consumer whose gate holds an unknown channel for it, and passed to
 * `ShuffleEnvironment.updatePartitionInfo`.
 */
export interface PartitionInfo {
  /** The data set of the partition (selects the consumer's gate). */
  readonly intermediateDataSetId: IntermediateDataSetID;
  /** The producer's real descriptor (not unknown). */
  readonly shuffleDescriptor: ShuffleDescriptor;
}

/**
 * Creates a partition info, checking that the descriptor belongs to the data set.
 *
 * @throws DescriptorError otherwise.
 */
export function createPartitionInfo(
  intermediateDataSetId: IntermediateDataSetID,
  shuffleDescriptor: ShuffleDescriptor,
): PartitionInfo {
  const dataSet = shuffleDescriptor.resultPartitionId.partitionId.intermediateDataSetID;
  if (!dataSet.equals(intermediateDataSetId)) {
    throw new DescriptorError(
      `PartitionInfo: shuffleDescriptor belongs to data set ${dataSet}, not to ${intermediateDataSetId}`,
    );
  }
  return Object.freeze({ intermediateDataSetId, shuffleDescriptor });
}

/** The JSON form (version 1): `{ version, intermediateDataSetId: <hex>, shuffleDescriptor }`. */
export interface PartitionInfoJSON {
  /** The format version, {@link DESCRIPTOR_VERSION}. */
  readonly version: number;
  /** {@inheritDoc PartitionInfo.intermediateDataSetId} */
  readonly intermediateDataSetId: string;
  /** {@inheritDoc PartitionInfo.shuffleDescriptor} */
  readonly shuffleDescriptor: ShuffleDescriptorJSON;
}

function toJSON(info: PartitionInfo): PartitionInfoJSON {
  return {
    version: 1,
    intermediateDataSetId: info.intermediateDataSetId.toString(),
    shuffleDescriptor: ShuffleDescriptorCodec.toJSON(info.shuffleDescriptor),
  };
}

function fromFields(fields: JsonFields): PartitionInfo {
  return createPartitionInfo(
    fields.id(
      "intermediateDataSetId",
      "an IntermediateDataSetID (32 hex digits)",
      IntermediateDataSetID.fromHex,
    ),
    nested(fields, "shuffleDescriptor", ShuffleDescriptorCodec),
  );
}

/** JSON codec of {@link PartitionInfo}. */
export const PartitionInfoCodec: DescriptorCodec<PartitionInfo, PartitionInfoJSON> = defineCodec(
  "PartitionInfo",
  toJSON,
  fromFields,
);
