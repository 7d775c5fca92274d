import { frameRecord, type NetworkBufferPool } from "@sluice/core";
import {
  type PipelinedResultPartition,
  ResultPartitionManager,
  type SingleInputGate,
} from "@sluice/network/plugin";
import {
  buildLocalInputChannel,
  buildPipelinedResultPartition,
  buildSingleInputGate,
} from "@sluice/network/testing";

/**
 * A StringSerializer record (int32 length, then the UTF-8 bytes) framed as RecordWriter frames
 * every record before `emitRecord`: what a partition is handed for `value`.
 */
export function encodeString(value: string): Uint8Array {
  const bytes = Buffer.from(value, "utf8");
  const serialized = Buffer.alloc(4 + bytes.length);
  serialized.writeInt32BE(bytes.length, 0);
  bytes.copy(serialized, 4);
  return frameRecord(serialized);
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
): { partition: PipelinedResultPartition; gate: SingleInputGate } {
  const { channels, partitionBuffers, gateBuffers } = options;
  const backoff = options.backoff ?? { initialMs: 10, maxMs: 100 };
  const partitionManager = new ResultPartitionManager();
  const partition = buildPipelinedResultPartition({
    networkBufferPool: pool,
    partitionManager,
    numberOfSubpartitions: channels,
    requiredBuffers: partitionBuffers[0],
    maxBuffers: partitionBuffers[1],
    owningTaskName: options.producerName ?? "producer",
  });
  const gate = buildSingleInputGate({
    networkBufferPool: pool,
    requiredBuffers: gateBuffers[0],
    maxBuffers: gateBuffers[1],
    owningTaskName: options.consumerName ?? "consumer",
    numberOfInputChannels: channels,
  });
  for (let i = 0; i < channels; i++) {
    gate.setInputChannel(
      buildLocalInputChannel({
        gate,
        partitionId: partition.partitionId,
        channelIndex: i,
        subpartitionIndex: i,
        partitionManager,
        backoff,
      }),
    );
  }
  gate.setup();
  gate.requestPartitions();
  return { partition, gate };
}
