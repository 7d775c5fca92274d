import { IntermediateDataSetID, type NetworkBufferPool, ResultPartitionID } from "@sluice/core";
import {
  LocalInputChannel,
  ResultPartition,
  ResultPartitionManager,
  SingleInputGate,
} from "@sluice/network";
import { ResultPartitionType } from "@sluice/runtime-api";

/** A StringSerializer record as its writer frames it: int32 length, then the UTF-8 bytes. */
export function encodeString(value: string): Uint8Array {
  const bytes = Buffer.from(value, "utf8");
  const framed = Buffer.alloc(4 + bytes.length);
  framed.writeInt32BE(bytes.length, 0);
  bytes.copy(framed, 4);
  return framed;
}

/** How many buffers (minimum, maximum) a local partition and the gate reading it get. */
export interface LocalWiringOptions {
  /** Subpartitions of the producer, each read by one input channel of the gate. */
  readonly channels: number;
  readonly partitionBuffers: readonly [min: number, max: number];
  readonly gateBuffers: readonly [min: number, max: number];
  /** The producing and the consuming task's names (default `producer`, `consumer`). */
  readonly producerName?: string;
  readonly consumerName?: string;
  /** The channels' partition request backoff in ms (default 10 to 100). */
  readonly backoff?: { readonly initialMs: number; readonly maxMs: number };
}

/**
 * One PIPELINED_BOUNDED producer partition whose every subpartition is read by one local input
 * channel of one gate in this process, both set up and the partitions requested; buffers come
 * from `pool`.
 */
export function wireLocalPartition(
  pool: NetworkBufferPool,
  options: LocalWiringOptions,
): { partition: ResultPartition; gate: SingleInputGate } {
  const { channels, partitionBuffers, gateBuffers } = options;
  const backoff = options.backoff ?? { initialMs: 10, maxMs: 100 };
  const manager = new ResultPartitionManager();
  const partition = new ResultPartition({
    owningTaskName: options.producerName ?? "producer",
    partitionIndex: 0,
    partitionId: new ResultPartitionID(),
    partitionType: ResultPartitionType.PIPELINED_BOUNDED,
    numberOfSubpartitions: channels,
    partitionManager: manager,
    bufferPoolFactory: () =>
      pool.createBufferPool(partitionBuffers[0], partitionBuffers[1], {
        numberOfSubpartitions: channels,
      }),
  });
  const gate = new SingleInputGate({
    owningTaskName: options.consumerName ?? "consumer",
    gateIndex: 0,
    consumedResultId: new IntermediateDataSetID(),
    consumedPartitionType: ResultPartitionType.PIPELINED_BOUNDED,
    numberOfInputChannels: channels,
    bufferPoolFactory: () => pool.createBufferPool(gateBuffers[0], gateBuffers[1]),
  });
  for (let i = 0; i < channels; i++) {
    gate.setInputChannel(
      new LocalInputChannel(gate, i, partition.partitionId, i, manager, backoff),
    );
  }
  partition.setup();
  gate.setup();
  gate.requestPartitions();
  return { partition, gate };
}
