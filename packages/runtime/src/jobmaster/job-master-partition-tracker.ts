import type { IntermediateResultPartitionID, JobID, ResultPartitionID } from "@sluice/core";
import { ErrorCodes, isSluiceError, ResultPartitionID as PartitionId } from "@sluice/core";
import {
  createPartitionInfo,
  createUnknownShuffleDescriptor,
  type ShuffleDescriptor,
  type ShuffleMaster,
} from "@sluice/runtime-api";
import type { ProducedPartitionSpec } from "../messages/task-deployment-descriptor.js";
import { isTerminal } from "../messages/task-execution-state.js";
import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import type { ExecutionVertex } from "./execution-vertex.js";
import { type IntermediateDataSet, type JobEdge, partitionIdOf } from "./job-graph.js";
import type { TaskDeploymentDescriptorFactory } from "./task-deployment-descriptor-factory.js";

/** A partition the ShuffleMaster registered for a deployed producer. */
export interface RegisteredPartition {
  readonly dataSet: IntermediateDataSet;
  readonly descriptor: ShuffleDescriptor;
}

/** A partition a deployed subtask produces, registered and tracked. */
export interface ProducedPartition extends RegisteredPartition {
  /** What the subtask's deployment descriptor says of it. */
  readonly produced: ProducedPartitionSpec;
}

/** A tracked partition and the worker its producer ran on. */
export interface TrackedPartition extends RegisteredPartition {
  /** The producer's TaskExecutor, which holds the partition when it stores local resources. */
  readonly producerGateway: TaskExecutorGateway;
}

/** A consumer deployed before its producer, waiting for the partition's real descriptor. */
interface PendingUpdate {
  readonly consumer: ExecutionVertex;
  /** The consumer's attempt that waits: a restarted consumer is deployed with the real one. */
  readonly attempt: string;
  readonly edge: JobEdge;
}

/**
 * The partitions of one job and who waits for them (Flink's `JobMasterPartitionTracker`): it
 * tracks every partition registered for a deployed producer and where it lives, hands a consumer
 * the partition's descriptor or an unknown one that {@link updateConsumersOf} replaces once the
 * producer is deployed, stops tracking the partitions of a lost TaskExecutor (they are no longer
 * available, so the failover re-runs their producers), and releases partitions on the
 * ShuffleMaster (`releasePartitionExternally`) and on the TaskExecutors that hold them.
 */
export class JobMasterPartitionTracker {
  private readonly jobId: JobID;
  private readonly master: ShuffleMaster;
  private readonly partitions = new Map<string, TrackedPartition>();
  private readonly pendingUpdates = new Map<string, PendingUpdate[]>();
  /**
   * TaskExecutors that are gone: nothing is released there. By gateway, not resource id: a task
   * manager that lost its job manager registers again under its resource id as a new gateway,
   * whose partitions are released as any other's.
   */
  private readonly lostTaskExecutors = new Set<TaskExecutorGateway>();
  private releasing: Promise<void> = Promise.resolve();
  private readonly releaseErrors: Error[] = [];

  constructor(jobId: JobID, master: ShuffleMaster) {
    this.jobId = jobId;
    this.master = master;
  }

  /**
   * Registers the partitions `execution`'s current attempt produces of `dataSets` with the
   * ShuffleMaster, one after the other (Flink's `Execution.registerProducedPartitions`), and
   * tracks each.
   */
  async registerProducedPartitions(
    execution: ExecutionVertex,
    dataSets: readonly IntermediateDataSet[],
    descriptors: TaskDeploymentDescriptorFactory,
  ): Promise<ProducedPartition[]> {
    const { gateway, subtaskIndex } = execution;
    const registered: ProducedPartition[] = [];
    for (const dataSet of dataSets) {
      const partition = descriptors.partitionDescriptor(dataSet, subtaskIndex);
      const descriptor = await this.master.registerPartitionWithProducer(this.jobId, partition, {
        producerLocation: gateway.location.resourceId,
        producerExecutionId: execution.attemptId,
        address: gateway.location.host,
        dataPort: gateway.location.dataPort,
      });
      this.partitions.set(partition.partitionId.toString(), {
        dataSet,
        descriptor,
        producerGateway: gateway,
      });
      registered.push({
        dataSet,
        descriptor,
        produced: descriptors.producedPartition(dataSet, partition, descriptor),
      });
    }
    return registered;
  }

  /** Whether the partition `id` is tracked: registered, and neither lost nor released. */
  isTracked(id: IntermediateResultPartitionID): boolean {
    return this.partitions.has(id.toString());
  }

  /**
   * A TaskExecutor is gone: the partitions it held are lost with it. They are no longer tracked
   * and are returned (release them with {@link release}: the master hears of them, the worker is
   * not asked).
   */
  taskExecutorLost(gateway: TaskExecutorGateway): TrackedPartition[] {
    const resourceId = gateway.location.resourceId.toString();
    this.lostTaskExecutors.add(gateway);
    return this.stopTrackingWhere(
      (tracked) => tracked.descriptor.storesLocalResourcesOn?.toString() === resourceId,
    );
  }

  /** Stops tracking the partitions `ids` name (of their producers' current attempts); returns them. */
  stopTracking(ids: readonly ResultPartitionID[]): TrackedPartition[] {
    const wanted = new Set(ids.map((id) => id.toString()));
    return this.stopTrackingWhere((tracked) =>
      wanted.has(tracked.descriptor.resultPartitionId.toString()),
    );
  }

  /** Stops tracking the partitions of the data sets' partition ids `ids`; returns them. */
  stopTrackingPartitions(ids: readonly IntermediateResultPartitionID[]): TrackedPartition[] {
    const wanted = new Set(ids.map((id) => id.toString()));
    return this.stopTrackingWhere((tracked) =>
      wanted.has(tracked.descriptor.resultPartitionId.partitionId.toString()),
    );
  }

  /** Stops tracking every partition the current attempts of `producers` produce; returns them. */
  stopTrackingPartitionsOf(producers: readonly ExecutionVertex[]): TrackedPartition[] {
    const attempts = new Set(producers.map((producer) => producer.attemptId.toString()));
    return this.stopTrackingWhere((tracked) =>
      attempts.has(tracked.descriptor.resultPartitionId.producerId.toString()),
    );
  }

  /**
   * The descriptor `consumer` reads the partition of `producer` on `edge` with: the real one once
   * the producer is registered; else an unknown one, and the consumer waits for an update.
   */
  descriptorForConsumer(
    edge: JobEdge,
    producer: ExecutionVertex,
    consumer: ExecutionVertex,
  ): ShuffleDescriptor {
    const partitionId = partitionIdOf(edge, producer.subtaskIndex);
    const key = partitionId.toString();
    const registered = this.partitions.get(key);
    if (registered !== undefined) return registered.descriptor;
    const waiting = { consumer, attempt: consumer.attemptId.toString(), edge };
    this.pendingUpdates.set(key, [...(this.pendingUpdates.get(key) ?? []), waiting]);
    return createUnknownShuffleDescriptor(new PartitionId(partitionId, producer.attemptId));
  }

  /** Sends the registered partition's descriptor to the consumers still running that wait for it. */
  async updateConsumersOf(registered: RegisteredPartition): Promise<void> {
    const key = registered.descriptor.resultPartitionId.partitionId.toString();
    const waiting = this.pendingUpdates.get(key) ?? [];
    this.pendingUpdates.delete(key);
    for (const { consumer, attempt, edge } of waiting) {
      if (isTerminal(consumer.state) || consumer.attemptId.toString() !== attempt) continue;
      await consumer.gateway.updatePartitions(consumer.attemptId, [
        createPartitionInfo(edge.resultId, registered.descriptor),
      ]);
    }
  }

  /** Forgets every waiting consumer: a global restart replaced every attempt. */
  reset(): void {
    this.pendingUpdates.clear();
  }

  /**
   * Releases `partitions` (no longer tracked) on the master and on the workers holding them that
   * are not lost; returns the errors.
   */
  async release(partitions: readonly TrackedPartition[]): Promise<Error[]> {
    const errors: Error[] = [];
    const byWorker = new Map<string, { gateway: TaskExecutorGateway; ids: ResultPartitionID[] }>();
    for (const { descriptor, producerGateway } of partitions) {
      try {
        this.master.releasePartitionExternally(descriptor);
      } catch (error) {
        errors.push(error as Error);
      }
      const holder = descriptor.storesLocalResourcesOn?.toString();
      if (holder === undefined || this.lostTaskExecutors.has(producerGateway)) continue;
      if (holder !== producerGateway.location.resourceId.toString()) continue;
      const entry = byWorker.get(holder) ?? { gateway: producerGateway, ids: [] };
      entry.ids.push(descriptor.resultPartitionId);
      byWorker.set(holder, entry);
    }
    for (const { gateway, ids } of byWorker.values()) {
      try {
        await gateway.releasePartitions(this.jobId, ids);
      } catch (error) {
        // A task manager whose connection closed is gone, or on its way out (it ends when it
        // loses the job manager), and its partitions with it: nothing is left to release. Its
        // loss may not have been reported yet when the job ends.
        if (isSluiceError(error, ErrorCodes.REMOTE_TRANSPORT)) continue;
        errors.push(error as Error);
      }
    }
    return errors;
  }

  /**
   * Releases `partitions` (no longer tracked) as {@link release} does, one batch after the other
   * in the background; {@link awaitReleases} waits for them.
   */
  releaseInBackground(partitions: readonly TrackedPartition[]): void {
    if (partitions.length === 0) return;
    this.releasing = this.releasing.then(async () => {
      this.releaseErrors.push(...(await this.release(partitions)));
    });
  }

  /** Waits for the background releases; returns their errors so far, once each. */
  async awaitReleases(): Promise<Error[]> {
    await this.releasing;
    return this.releaseErrors.splice(0);
  }

  /** Releases every tracked partition and stops tracking them, after the background releases. */
  async releaseAll(): Promise<Error[]> {
    const errors = await this.awaitReleases();
    return [...errors, ...(await this.release(this.stopTrackingWhere(() => true)))];
  }

  private stopTrackingWhere(matches: (tracked: TrackedPartition) => boolean): TrackedPartition[] {
    const removed: TrackedPartition[] = [];
    for (const [key, tracked] of this.partitions) {
      if (!matches(tracked)) continue;
      this.partitions.delete(key);
      removed.push(tracked);
    }
    return removed;
  }
}
