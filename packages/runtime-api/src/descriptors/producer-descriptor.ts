import { ExecutionAttemptID, ResourceID } from "@sluice/core";
import { type DescriptorCodec, defineCodec, type JsonFields } from "./json-fields.js";

/**
 * Where the producer of a partition runs (Flink's `ProducerDescriptor`): passed by the scheduler to
 * `ShuffleMaster.registerPartitionWithProducer` so that the master can tell consumers how to reach
 * the producer. Plain, immutable data.
 */
export interface ProducerDescriptor {
  /** The producer's worker. */
  readonly producerLocation: ResourceID;
  /** The producing execution attempt. */
  readonly producerExecutionId: ExecutionAttemptID;
  /** Address of the producer's worker as other workers reach it (`taskmanager.host`). */
  readonly address: string;
  /**
   * Data port of the producer's worker (`ShuffleEnvironment.start()`); negative when the worker
   * accepts only local (same-process) consumers.
   */
  readonly dataPort: number;
}

/** The JSON form of a {@link ProducerDescriptor} (version 1); ids as strings. */
export interface ProducerDescriptorJSON {
  /** The format version, {@link DESCRIPTOR_VERSION}. */
  readonly version: number;
  /** {@inheritDoc ProducerDescriptor.producerLocation} */
  readonly producerLocation: string;
  /** {@inheritDoc ProducerDescriptor.producerExecutionId} */
  readonly producerExecutionId: string;
  /** {@inheritDoc ProducerDescriptor.address} */
  readonly address: string;
  /** {@inheritDoc ProducerDescriptor.dataPort} */
  readonly dataPort: number;
}

function toJSON(descriptor: ProducerDescriptor): ProducerDescriptorJSON {
  return {
    version: 1,
    producerLocation: descriptor.producerLocation.toString(),
    producerExecutionId: descriptor.producerExecutionId.toString(),
    address: descriptor.address,
    dataPort: descriptor.dataPort,
  };
}

function fromFields(fields: JsonFields): ProducerDescriptor {
  return Object.freeze({
    producerLocation: fields.id(
      "producerLocation",
      "a ResourceID (32 hex digits)",
      ResourceID.fromHex,
    ),
    producerExecutionId: fields.id(
      "producerExecutionId",
      "an ExecutionAttemptID (<graphHex>_<vertexHex>_<subtask>_<attempt>)",
      ExecutionAttemptID.parse,
    ),
    address: fields.string("address"),
    dataPort: fields.integer("dataPort", -1, 65535),
  });
}

/** JSON codec of {@link ProducerDescriptor} (format: {@link ProducerDescriptorJSON}). */
export const ProducerDescriptorCodec: DescriptorCodec<ProducerDescriptor, ProducerDescriptorJSON> =
  defineCodec("ProducerDescriptor", toJSON, fromFields);
