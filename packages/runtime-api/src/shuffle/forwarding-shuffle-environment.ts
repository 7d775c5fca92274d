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
import type { ShuffleEnvironment } from "./shuffle-environment.js";

/**
 * A {@link ShuffleEnvironment} that forwards every call to another one, the base of a decorator
 * (metrics, logging, fault injection): a subclass overrides only the members it changes and calls
 * `super` to reach the wrapped environment. Every member of the SPI is forwarded, so a wrapper
 * never needs a `Proxy`. Each method calls the wrapped environment's, with it as `this`, and
 * returns what it returned (nothing, for the `void` members).
 *
 * @typeParam P the wrapped plugin's writer type.
 * @typeParam G the wrapped plugin's gate type.
 */
export class ForwardingShuffleEnvironment<
  P extends ResultPartitionWriter = ResultPartitionWriter,
  G extends InputGate = InputGate,
> implements ShuffleEnvironment<P, G>
{
  /** @param delegate the environment every call goes to. */
  constructor(protected readonly delegate: ShuffleEnvironment<P, G>) {}

  /** Starts the wrapped environment and resolves with its data port; see {@link ShuffleEnvironment.start}. */
  start(): Promise<number> {
    return this.delegate.start();
  }

  /**
   * The task's context, created by the wrapped environment; see
   * {@link ShuffleEnvironment.createShuffleIOOwnerContext}.
   */
  createShuffleIOOwnerContext(
    ownerName: string,
    executionAttemptId: ExecutionAttemptID,
    metrics?: ShuffleMetricSink,
  ): ShuffleIOOwnerContext {
    return this.delegate.createShuffleIOOwnerContext(ownerName, executionAttemptId, metrics);
  }

  /**
   * The task's writers, created by the wrapped environment; see
   * {@link ShuffleEnvironment.createResultPartitionWriters}.
   */
  createResultPartitionWriters(
    ownerContext: ShuffleIOOwnerContext,
    descriptors: readonly ResultPartitionDeploymentDescriptor[],
  ): P[] {
    return this.delegate.createResultPartitionWriters(ownerContext, descriptors);
  }

  /**
   * The task's gates, created by the wrapped environment; see
   * {@link ShuffleEnvironment.createInputGates}.
   */
  createInputGates(
    ownerContext: ShuffleIOOwnerContext,
    partitionProducerStateProvider: PartitionProducerStateProvider,
    descriptors: readonly InputGateDeploymentDescriptor[],
  ): G[] {
    return this.delegate.createInputGates(
      ownerContext,
      partitionProducerStateProvider,
      descriptors,
    );
  }

  /**
   * Hands the partition's location to the wrapped environment; see
   * {@link ShuffleEnvironment.updatePartitionInfo}.
   */
  updatePartitionInfo(
    consumerAttemptId: ExecutionAttemptID,
    partitionInfo: PartitionInfo,
  ): boolean {
    return this.delegate.updatePartitionInfo(consumerAttemptId, partitionInfo);
  }

  /**
   * Has the wrapped environment free the partitions' local resources; see
   * {@link ShuffleEnvironment.releasePartitionsLocally}.
   */
  releasePartitionsLocally(partitionIds: readonly ResultPartitionID[]): void {
    this.delegate.releasePartitionsLocally(partitionIds);
  }

  /**
   * The partitions holding resources in the wrapped environment; see
   * {@link ShuffleEnvironment.getPartitionsOccupyingLocalResources}.
   */
  getPartitionsOccupyingLocalResources(): ResultPartitionID[] {
    return this.delegate.getPartitionsOccupyingLocalResources();
  }

  /** Closes the wrapped environment; see {@link ShuffleEnvironment.close}. */
  close(): Promise<void> {
    return this.delegate.close();
  }
}
