import type { IntermediateDataSetID, JobID, ResultPartitionID } from "@sluice/core";
import type { ResultPartitionDeploymentDescriptor, ResultPartitionType } from "@sluice/runtime-api";

/** What the worker knows of a partition it holds (Flink's `TaskExecutorPartitionInfo`). */
export interface TaskExecutorPartitionInfo {
  /** The partition and its producer's execution attempt. */
  readonly partitionId: ResultPartitionID;
  /** The data set the partition belongs to. */
  readonly resultId: IntermediateDataSetID;
  /** Its type: BLOCKING, BLOCKING_PERSISTENT or a hybrid type. */
  readonly partitionType: ResultPartitionType;
  /** How many subpartitions it has. */
  readonly numberOfSubpartitions: number;
}

/** The part of the shuffle environment the tracker releases partitions through. */
export interface PartitionReleaser {
  /** Frees the local resources (buffers, files) of these partitions. */
  releasePartitionsLocally(partitionIds: readonly ResultPartitionID[]): void;
}

/**
 * Which partitions this worker holds for each job (Flink's `TaskExecutorPartitionTracker`): the
 * partitions the scheduler releases (BLOCKING, BLOCKING_PERSISTENT, hybrid) whose data stays on
 * this worker. Such a partition outlives the task that produced it: it is tracked from the
 * task's deployment until the job side releases it, or the job is released on this worker. A
 * producer that does not finish releases its partitions itself; they are then only forgotten.
 * Pipelined partitions are not tracked: they are released once consumed.
 */
export class TaskExecutorPartitionTracker {
  private readonly releaser: PartitionReleaser;
  /** Tracked partitions by `ResultPartitionID.toString()`. */
  private readonly partitions = new Map<
    string,
    { jobId: JobID; info: TaskExecutorPartitionInfo }
  >();

  /** @param releaser - the worker's shuffle environment. */
  constructor(releaser: PartitionReleaser) {
    this.releaser = releaser;
  }

  /**
   * Whether a partition of this deployment needs tracking (Flink's
   * `filterPartitionsRequiringRelease`): it is released by the scheduler and its shuffle
   * descriptor says it keeps resources on a worker.
   */
  static requiresRelease(deployment: ResultPartitionDeploymentDescriptor): boolean {
    return (
      deployment.partitionDescriptor.partitionType.releasedBy === "scheduler" &&
      deployment.shuffleDescriptor.storesLocalResourcesOn !== undefined
    );
  }

  /** The information tracked for the partition of `deployment`. */
  static infoOf(deployment: ResultPartitionDeploymentDescriptor): TaskExecutorPartitionInfo {
    const { partitionDescriptor, shuffleDescriptor } = deployment;
    return {
      partitionId: shuffleDescriptor.resultPartitionId,
      resultId: partitionDescriptor.resultId,
      partitionType: partitionDescriptor.partitionType,
      numberOfSubpartitions: partitionDescriptor.numberOfSubpartitions,
    };
  }

  /** Starts tracking a partition of `jobId` (at its producer's deployment). */
  startTrackingPartition(jobId: JobID, info: TaskExecutorPartitionInfo): void {
    this.partitions.set(info.partitionId.toString(), { jobId, info });
  }

  /**
   * Forgets these partitions without releasing them (their producer failed and released them
   * already). Returns the ones that were tracked.
   */
  stopTrackingPartitions(partitionIds: readonly ResultPartitionID[]): TaskExecutorPartitionInfo[] {
    const stopped: TaskExecutorPartitionInfo[] = [];
    for (const id of partitionIds) {
      const key = id.toString();
      const entry = this.partitions.get(key);
      if (entry === undefined) continue;
      this.partitions.delete(key);
      stopped.push(entry.info);
    }
    return stopped;
  }

  /**
   * Releases these partitions (the job side says they are consumed, or lost elsewhere) and stops
   * tracking them. Partitions that are not tracked are released too: the environment ignores
   * the ones it does not hold.
   */
  stopTrackingAndReleaseJobPartitions(partitionIds: readonly ResultPartitionID[]): void {
    this.stopTrackingPartitions(partitionIds);
    if (partitionIds.length > 0) this.releaser.releasePartitionsLocally(partitionIds);
  }

  /**
   * Releases every partition tracked for `jobId` (the job is released on this worker: it ended,
   * or its job master is gone) and returns their ids. BLOCKING_PERSISTENT partitions are
   * released too: their job master is the one that could have kept them.
   */
  stopTrackingAndReleaseJobPartitionsFor(jobId: JobID): ResultPartitionID[] {
    const ids = this.getTrackedPartitionsFor(jobId).map((info) => info.partitionId);
    this.stopTrackingAndReleaseJobPartitions(ids);
    return ids;
  }

  /** Releases every tracked partition (the worker shuts down). */
  stopTrackingAndReleaseAllPartitions(): void {
    const ids = [...this.partitions.values()].map((entry) => entry.info.partitionId);
    this.stopTrackingAndReleaseJobPartitions(ids);
  }

  /** True while a partition of `jobId` is tracked here. */
  isTrackingPartitionsFor(jobId: JobID): boolean {
    for (const entry of this.partitions.values()) if (entry.jobId.equals(jobId)) return true;
    return false;
  }

  /** True while `partitionId` is tracked here. */
  isPartitionTracked(partitionId: ResultPartitionID): boolean {
    return this.partitions.has(partitionId.toString());
  }

  /** The partitions tracked for `jobId`, in the order they were deployed. */
  getTrackedPartitionsFor(jobId: JobID): TaskExecutorPartitionInfo[] {
    const infos: TaskExecutorPartitionInfo[] = [];
    for (const entry of this.partitions.values()) {
      if (entry.jobId.equals(jobId)) infos.push(entry.info);
    }
    return infos;
  }
}
