import type { ResultPartitionID } from "@sluice/core";
import { ForwardingShuffleEnvironment, type ShuffleEnvironment } from "@sluice/runtime-api";
import type { TaskSlotTable } from "./task-slot-table.js";

/** The part of the network environment a task manager's shutdown report reads. */
interface WithNetworkBufferPool {
  readonly networkBufferPool?: unknown;
}

/**
 * The shuffle environment of a task manager whose slots run on worker threads, as its main
 * thread shows it: the main thread's own environment (its data server, and its buffer pool over
 * the network memory every thread shares), with the partitions of every slot. What it holds is
 * what the slots reported last; releasing partitions reaches every slot.
 */
export class TaskSlotsShuffleEnvironment extends ForwardingShuffleEnvironment {
  private readonly table: TaskSlotTable;

  constructor(networkThread: ShuffleEnvironment, table: TaskSlotTable) {
    super(networkThread);
    this.table = table;
  }

  /**
   * The main thread's buffer pool (its free segments are those of the whole task manager), when
   * the plugin has one.
   */
  get networkBufferPool(): unknown {
    return (this.delegate as WithNetworkBufferPool).networkBufferPool;
  }

  /** The partitions the slots hold, as they last reported them. */
  override getPartitionsOccupyingLocalResources(): ResultPartitionID[] {
    return this.table.partitions();
  }

  /**
   * Every slot frees these of its partitions (in the background). A slot whose thread ended
   * meanwhile fails the call, and has nothing left to free: its partitions went with it.
   */
  override releasePartitionsLocally(partitionIds: readonly ResultPartitionID[]): void {
    void this.table.releasePartitions(partitionIds, true).catch(() => undefined);
  }
}
