import type { ExecutionAttemptID, ResultPartitionID } from "@sluice/core";
import type { InputGate } from "../consumer/input-gate.js";
import type { InputGateDeploymentDescriptor } from "../descriptors/input-gate-deployment-descriptor.js";
import type { PartitionInfo } from "../descriptors/partition-info.js";
import type { ResultPartitionDeploymentDescriptor } from "../descriptors/result-partition-deployment-descriptor.js";
import type { ResultPartitionWriter } from "../partition/result-partition-writer.js";
import type {
  PartitionProducerStateProvider,
  ShuffleIOOwnerContext,
  ShuffleMetricSink,
} from "./contexts.js";

/**
 * The worker-side shuffle (Flink's `ShuffleEnvironment`), one per worker process, created by
 * `ShuffleServiceFactory.createShuffleEnvironment`. It owns the worker's network memory and
 * transport, and creates the writers and gates of every task on the worker.
 *
 * Called from the worker's event loop. Release contract (as in Flink):
 * - on failure a writer gets `fail()` then `close()`;
 * - pipelined partitions are released by the environment after their single consumption ended
 *   (after `finish()` + `close()` of the writer);
 * - blocking partitions live until the scheduler calls `releasePartitionsLocally` (for partitions
 *   whose descriptor `storesLocalResourcesOn` this worker) and can be consumed many times.
 *
 * @typeParam P the plugin's writer type.
 * @typeParam G the plugin's gate type.
 */
export interface ShuffleEnvironment<
  P extends ResultPartitionWriter = ResultPartitionWriter,
  G extends InputGate = InputGate,
> {
  /**
   * Starts the environment's services (buffer pool, data server). Resolves with the data port
   * other workers connect to, or -1 when the environment accepts only local consumers
   * (`localCommunicationOnly`). Called once, before any other method.
   */
  start(): Promise<number>;

  /**
   * Creates the context of one task; called once per task, before its writers and gates are
   * created.
   */
  createShuffleIOOwnerContext(
    ownerName: string,
    executionAttemptId: ExecutionAttemptID,
    metrics?: ShuffleMetricSink,
  ): ShuffleIOOwnerContext;

  /**
   * Creates one writer per descriptor, in the same order. Writers are not set up yet: the task
   * calls `setup()` on each.
   */
  createResultPartitionWriters(
    ownerContext: ShuffleIOOwnerContext,
    descriptors: readonly ResultPartitionDeploymentDescriptor[],
  ): P[];

  /**
   * Creates one gate per descriptor, in the same order, with one channel per shuffle descriptor
   * (local, remote, or unknown). Gates are not set up yet: the task calls `setup()` and
   * `requestPartitions()` on each.
   */
  createInputGates(
    ownerContext: ShuffleIOOwnerContext,
    partitionProducerStateProvider: PartitionProducerStateProvider,
    descriptors: readonly InputGateDeploymentDescriptor[],
  ): G[];

  /**
   * Replaces the unknown channel of `consumerAttemptId`'s gate for `partitionInfo`'s partition with
   * a real one. Returns false when the consumer or its gate is gone (e.g. the task already
   * finished or failed); true otherwise.
   */
  updatePartitionInfo(consumerAttemptId: ExecutionAttemptID, partitionInfo: PartitionInfo): boolean;

  /**
   * Frees the local resources of these partitions (data held in this worker), whether or not they
   * were consumed. Unknown ids are ignored.
   */
  releasePartitionsLocally(partitionIds: readonly ResultPartitionID[]): void;

  /** The partitions that still hold resources in this worker (not yet released). */
  getPartitionsOccupyingLocalResources(): ResultPartitionID[];

  /**
   * Stops the data server, releases every partition and gate, and frees the network memory.
   * Called once at worker shutdown. Idempotent.
   */
  close(): Promise<void>;
}
