import {
  type LocalBufferPoolOptions,
  type NetworkBufferPool,
  ResultPartitionID,
} from "@sluice/core";
import { ResultPartitionType } from "@sluice/runtime-api";
import type { PartitionRegistry } from "../partition/managed-result-partition.js";
import { PipelinedResultPartition } from "../partition/pipelined-result-partition.js";

/**
 * What a test says about the pipelined partition it builds; everything else gets a default
 * (Flink's ResultPartitionBuilder).
 */
export interface PipelinedResultPartitionBuilderOptions {
  /** The NetworkBufferPool the partition's LocalBufferPool is created from at `setup()`. */
  readonly networkBufferPool: NetworkBufferPool;
  /** Where the partition registers itself (usually a ResultPartitionManager). */
  readonly partitionManager: PartitionRegistry;
  /** Default 1. */
  readonly numberOfSubpartitions?: number;
  /** Segments the LocalBufferPool is guaranteed. Default: one per subpartition plus one. */
  readonly requiredBuffers?: number;
  /** Segments the LocalBufferPool may use at most. */
  readonly maxBuffers: number;
  /**
   * More options of the LocalBufferPool (max-buffers-per-channel, overdraft, …); its
   * `numberOfSubpartitions` is the partition's unless given here.
   */
  readonly poolOptions?: LocalBufferPoolOptions;
  /** Default "producer". */
  readonly owningTaskName?: string;
  /** Default 0. */
  readonly partitionIndex?: number;
  /** Default: a new random id. */
  readonly partitionId?: ResultPartitionID;
  /** Default PIPELINED_BOUNDED. */
  readonly partitionType?: ResultPartitionType;
  /** `taskmanager.network.max-record-size`; default: no limit. */
  readonly maxRecordSize?: number;
  /** `taskmanager.memory.min-segment-size`; default 1. */
  readonly minBufferSize?: number;
  /** The sequence number of each subpartition's first buffer; default 0. */
  readonly initialSequenceNumber?: number;
  /** Whether `setup()` is called before the partition is returned. Default true. */
  readonly setup?: boolean;
}

/**
 * A PipelinedResultPartition over a LocalBufferPool of `networkBufferPool`, set up (registered
 * with `partitionManager`) unless `setup` is false.
 */
export function buildPipelinedResultPartition(
  options: PipelinedResultPartitionBuilderOptions,
): PipelinedResultPartition {
  const numberOfSubpartitions = options.numberOfSubpartitions ?? 1;
  const global = options.networkBufferPool;
  const poolOptions: LocalBufferPoolOptions = { numberOfSubpartitions, ...options.poolOptions };
  const partition = new PipelinedResultPartition({
    owningTaskName: options.owningTaskName ?? "producer",
    partitionIndex: options.partitionIndex ?? 0,
    partitionId: options.partitionId ?? new ResultPartitionID(),
    partitionType: options.partitionType ?? ResultPartitionType.PIPELINED_BOUNDED,
    numberOfSubpartitions,
    partitionManager: options.partitionManager,
    bufferPoolFactory: () =>
      global.createBufferPool(
        options.requiredBuffers ?? numberOfSubpartitions + 1,
        options.maxBuffers,
        poolOptions,
      ),
    ...(options.maxRecordSize === undefined ? {} : { maxRecordSize: options.maxRecordSize }),
    ...(options.minBufferSize === undefined ? {} : { minBufferSize: options.minBufferSize }),
    ...(options.initialSequenceNumber === undefined
      ? {}
      : { initialSequenceNumber: options.initialSequenceNumber }),
  });
  if (options.setup ?? true) partition.setup();
  return partition;
}
