import type { JobID } from "@sluice/core";
import type { PartitionDescriptor } from "../descriptors/partition-descriptor.js";
import type { ProducerDescriptor } from "../descriptors/producer-descriptor.js";
import type { ShuffleDescriptor } from "../descriptors/shuffle-descriptor.js";
import type { TaskInputsOutputsDescriptor } from "../descriptors/task-inputs-outputs-descriptor.js";
import type { JobShuffleContext } from "./contexts.js";

/**
 * The coordinator-side registry of partitions (Flink's `ShuffleMaster`), one per cluster, created
 * by `ShuffleServiceFactory.createShuffleMaster`. The scheduler registers every partition before
 * deploying its producer and receives the {@link ShuffleDescriptor} it then ships to the producer
 * and its consumers.
 *
 * Called from the coordinator's event loop; the master may assume calls for one job come after
 * `registerJob` and before `unregisterJob`.
 *
 * @typeParam SD the plugin's descriptor type.
 */
export interface ShuffleMaster<SD extends ShuffleDescriptor = ShuffleDescriptor> {
  /** Starts the master (e.g. connects to an external service). Called once, before anything else. */
  start(): Promise<void>;

  /** Releases everything; called once at coordinator shutdown. Idempotent. */
  close(): Promise<void>;

  /**
   * Registers a job before any of its partitions. The context lets the master report lost
   * partitions back to the scheduler.
   */
  registerJob(context: JobShuffleContext): void;

  /** The job reached a terminal state: free everything the master holds for it. */
  unregisterJob(jobId: JobID): void;

  /**
   * Registers a partition and its producer and returns the descriptor consumers use to read it.
   * May complete asynchronously (e.g. when an external service allocates storage). Called once per
   * partition before the producer is deployed.
   */
  registerPartitionWithProducer(
    jobId: JobID,
    partitionDescriptor: PartitionDescriptor,
    producerDescriptor: ProducerDescriptor,
  ): Promise<SD>;

  /**
   * Frees resources the partition holds outside the producer's worker (an external service's
   * storage). Called by the scheduler when the partition is no longer needed; for partitions with
   * local resources the scheduler additionally asks the worker to
   * `releasePartitionsLocally`. Must not throw for unknown partitions.
   */
  releasePartitionExternally(shuffleDescriptor: SD): void;

  /**
   * Where the shuffle's own processes reach this master (`host:port`), for a shuffle that has
   * such processes (a remote shuffle's workers register with its manager); `undefined`, or not
   * implemented, for one that has none. Read after {@link ShuffleMaster.start}. With high
   * availability the leading job manager publishes it beside its own address (see
   * `LeaderEndpoints.shuffleMasterAddress`), so those processes follow the leader's master and
   * never serve a deposed one.
   */
  getAdvertisedAddress?(): string | undefined;

  /**
   * Network memory (bytes) a task with these inputs and outputs needs, for fine-grained resource
   * planning. Return 0 when the plugin needs none beyond the worker's shared pool.
   */
  computeShuffleMemorySizeForTask(descriptor: TaskInputsOutputsDescriptor): number;
}
