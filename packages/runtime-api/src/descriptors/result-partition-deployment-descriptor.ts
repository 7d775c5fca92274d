import { DescriptorError } from "../errors.js";
import { type DescriptorCodec, defineCodec, type JsonFields, nested } from "./json-fields.js";
import {
  type PartitionDescriptor,
  PartitionDescriptorCodec,
  type PartitionDescriptorJSON,
} from "./partition-descriptor.js";
import {
  type ShuffleDescriptor,
  ShuffleDescriptorCodec,
  type ShuffleDescriptorJSON,
} from "./shuffle-descriptor.js";

/**
 * The largest max parallelism (number of key groups) Flink allows: 2^15, kept so that every job
 * Flink accepts gets the same key-group layout here. The key-group assignment and the deployment
 * descriptors both check against it.
 */
export const UPPER_BOUND_MAX_PARALLELISM = 32768;

/**
 * Everything a worker needs to create the writer of one produced partition (Flink's
 * `ResultPartitionDeploymentDescriptor`): the scheduler's {@link PartitionDescriptor}, the
 * plugin's {@link ShuffleDescriptor} (from `registerPartitionWithProducer`) and the max
 * parallelism (number of key groups) of the data set. Passed in a list to
 * `ShuffleEnvironment.createResultPartitionWriters`.
 */
export interface ResultPartitionDeploymentDescriptor {
  /** What the scheduler registered: data set, partition, type, subpartitions. */
  readonly partitionDescriptor: PartitionDescriptor;
  /** What the plugin's master returned for this partition. */
  readonly shuffleDescriptor: ShuffleDescriptor;
  /** Number of key groups, in [1, 32768]. */
  readonly maxParallelism: number;
}

/**
 * Creates a deployment descriptor, checking that `maxParallelism` is in [1, 32768] and that both
 * descriptors describe the same partition.
 *
 * @throws DescriptorError otherwise.
 */
export function createResultPartitionDeploymentDescriptor(
  partitionDescriptor: PartitionDescriptor,
  shuffleDescriptor: ShuffleDescriptor,
  maxParallelism: number,
): ResultPartitionDeploymentDescriptor {
  if (
    !Number.isInteger(maxParallelism) ||
    maxParallelism < 1 ||
    maxParallelism > UPPER_BOUND_MAX_PARALLELISM
  ) {
    throw new DescriptorError(
      `ResultPartitionDeploymentDescriptor: maxParallelism must be an integer in [1, ${UPPER_BOUND_MAX_PARALLELISM}], got ${maxParallelism}`,
    );
  }
  const described = shuffleDescriptor.resultPartitionId.partitionId;
  if (!described.equals(partitionDescriptor.partitionId)) {
    throw new DescriptorError(
      `ResultPartitionDeploymentDescriptor: shuffleDescriptor describes partition ${described} but partitionDescriptor describes ${partitionDescriptor.partitionId}`,
    );
  }
  return Object.freeze({ partitionDescriptor, shuffleDescriptor, maxParallelism });
}

/**
 * The JSON form (version 1): `{ version, partitionDescriptor: <PartitionDescriptorJSON>,
 * shuffleDescriptor: <ShuffleDescriptorJSON>, maxParallelism }`.
 */
export interface ResultPartitionDeploymentDescriptorJSON {
  /** The format version, {@link DESCRIPTOR_VERSION}. */
  readonly version: number;
  /** {@inheritDoc ResultPartitionDeploymentDescriptor.partitionDescriptor} */
  readonly partitionDescriptor: PartitionDescriptorJSON;
  /** {@inheritDoc ResultPartitionDeploymentDescriptor.shuffleDescriptor} */
  readonly shuffleDescriptor: ShuffleDescriptorJSON;
  /** {@inheritDoc ResultPartitionDeploymentDescriptor.maxParallelism} */
  readonly maxParallelism: number;
}

function toJSON(
  descriptor: ResultPartitionDeploymentDescriptor,
): ResultPartitionDeploymentDescriptorJSON {
  return {
    version: 1,
    partitionDescriptor: PartitionDescriptorCodec.toJSON(descriptor.partitionDescriptor),
    shuffleDescriptor: ShuffleDescriptorCodec.toJSON(descriptor.shuffleDescriptor),
    maxParallelism: descriptor.maxParallelism,
  };
}

function fromFields(fields: JsonFields): ResultPartitionDeploymentDescriptor {
  const maxParallelism = fields.integer("maxParallelism", 1, UPPER_BOUND_MAX_PARALLELISM);
  const partitionDescriptor = nested(fields, "partitionDescriptor", PartitionDescriptorCodec);
  const shuffleDescriptor = nested(fields, "shuffleDescriptor", ShuffleDescriptorCodec);
  return createResultPartitionDeploymentDescriptor(
    partitionDescriptor,
    shuffleDescriptor,
    maxParallelism,
  );
}

/** JSON codec of {@link ResultPartitionDeploymentDescriptor}. */
export const ResultPartitionDeploymentDescriptorCodec: DescriptorCodec<
  ResultPartitionDeploymentDescriptor,
  ResultPartitionDeploymentDescriptorJSON
> = defineCodec("ResultPartitionDeploymentDescriptor", toJSON, fromFields);
