import type { ResultPartitionID } from "@sluice/core";
import type { ResultPartitionType } from "@sluice/runtime-api";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { ResultSubpartitionView } from "./result-subpartition-view.js";

/**
 * What the ResultPartitionManager needs of a partition it serves (Flink's ResultPartition base
 * class): the pipelined `ResultPartition` and the blocking `SortMergeResultPartition`.
 */
export interface ManagedResultPartition {
  readonly partitionId: ResultPartitionID;
  readonly partitionType: ResultPartitionType;
  /**
   * True when consumers may read it now: a pipelined partition from registration on, a blocking
   * one once its producer finished and its files are complete.
   */
  isConsumable(): boolean;
  /** A new view of subpartition `index`; throws when it cannot be read (released, range). */
  createSubpartitionView(
    index: number,
    listener: BufferAvailabilityListener,
  ): ResultSubpartitionView;
  /** Releases everything the partition holds (memory, files), with `cause` when it failed. */
  release(cause?: Error): void;
  getFailureCause(): Error | undefined;
}

/** Where a partition registers itself; implemented by ResultPartitionManager. */
export interface PartitionRegistry {
  registerResultPartition(partition: ManagedResultPartition): void;
  /** Every subpartition was consumed once (pipelined partitions are released then). */
  onConsumedPartition(partition: ManagedResultPartition): void;
  /** A registered partition that was not consumable became consumable (a blocking one finished). */
  onPartitionConsumable(partition: ManagedResultPartition): void;
  /** The partition was released (failed, cancelled, consumed): it no longer holds resources. */
  onPartitionReleased(partition: ManagedResultPartition): void;
}
