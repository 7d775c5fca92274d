import { type JobID, ResultPartitionID } from "@sluice/core";
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

/** A consumer deployed before its producer, waiting for the partition's real descriptor. */
interface PendingUpdate {
  readonly consumer: ExecutionVertex;
  readonly edge: JobEdge;
}

/**
 * The partitions of one job attempt and who waits for them (Flink's
 * `JobMasterPartitionTracker`): it tracks every partition registered for a deployed producer,
 * hands a consumer the partition's descriptor or an unknown one that {@link updateConsumersOf}
 * replaces once the producer is deployed, and releases the partitions on the ShuffleMaster and
 * on the TaskExecutors that hold them.
 */
export class JobMasterPartitionTracker {
  private readonly jobId: JobID;
  private readonly master: ShuffleMaster;
  private readonly partitions = new Map<string, RegisteredPartition>();
  private readonly pendingUpdates = new Map<string, PendingUpdate[]>();
  /** Resource ids of TaskExecutors that are gone: nothing is released there. */
  private readonly lostTaskExecutors = new Set<string>();

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
      this.partitions.set(partition.partitionId.toString(), { dataSet, descriptor });
      registered.push({
        dataSet,
        descriptor,
        produced: descriptors.producedPartition(dataSet, partition, descriptor),
      });
    }
    return registered;
  }

  /** A TaskExecutor is gone: its partitions are lost with it and are not released there. */
  taskExecutorLost(gateway: TaskExecutorGateway): void {
    this.lostTaskExecutors.add(gateway.location.resourceId.toString());
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
    this.pendingUpdates.set(key, [...(this.pendingUpdates.get(key) ?? []), { consumer, edge }]);
    return createUnknownShuffleDescriptor(new ResultPartitionID(partitionId, producer.attemptId));
  }

  /** Sends the registered partition's descriptor to the consumers still running that wait for it. */
  async updateConsumersOf(registered: RegisteredPartition): Promise<void> {
    const key = registered.descriptor.resultPartitionId.partitionId.toString();
    const waiting = this.pendingUpdates.get(key) ?? [];
    this.pendingUpdates.delete(key);
    for (const { consumer, edge } of waiting) {
      if (isTerminal(consumer.state)) continue;
      await consumer.gateway.updatePartitions(consumer.attemptId, [
        createPartitionInfo(edge.resultId, registered.descriptor),
      ]);
    }
  }

  /** Forgets every partition and waiting consumer: a restart replaced the attempt. */
  reset(): void {
    this.partitions.clear();
    this.pendingUpdates.clear();
  }

  /**
   * Releases every tracked partition on the master and on the workers holding them (those among
   * `gateways`, the job's, that are not lost) and stops tracking them; returns the errors.
   */
  async releaseAll(gateways: readonly TaskExecutorGateway[]): Promise<Error[]> {
    const errors: Error[] = [];
    const byResourceId = new Map(gateways.map((g) => [g.location.resourceId.toString(), g]));
    const byWorker = new Map<string, { gateway: TaskExecutorGateway; ids: ResultPartitionID[] }>();
    for (const { descriptor } of this.partitions.values()) {
      try {
        this.master.releasePartitionExternally(descriptor);
      } catch (error) {
        errors.push(error as Error);
      }
      const holder = descriptor.storesLocalResourcesOn?.toString();
      const gateway = holder === undefined ? undefined : byResourceId.get(holder);
      if (holder === undefined || gateway === undefined) continue;
      if (this.lostTaskExecutors.has(holder)) continue;
      const entry = byWorker.get(holder) ?? { gateway, ids: [] };
      entry.ids.push(descriptor.resultPartitionId);
      byWorker.set(holder, entry);
    }
    this.partitions.clear();
    for (const { gateway, ids } of byWorker.values()) {
      try {
        await gateway.releasePartitions(this.jobId, ids);
      } catch (error) {
        errors.push(error as Error);
      }
    }
    return errors;
  }
}
