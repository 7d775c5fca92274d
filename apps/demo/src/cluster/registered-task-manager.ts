import type { ExecutionAttemptID, JobID, ResultPartitionID } from "@sluice/core";
import {
  type JobMasterGateway,
  type TaskDeploymentDescriptor,
  TaskDeploymentDescriptorCodec,
  type TaskExecutorGateway,
  type TaskManagerLocation,
} from "@sluice/runtime";
import { type PartitionInfo, PartitionInfoCodec } from "@sluice/runtime-api";
import type {
  JobManagerMethods,
  ShutdownReport,
  TaskManagerMethods,
} from "./control-plane-messages.js";
import type { RpcPeer } from "./rpc-peer.js";

/** The job manager's end of a control connection to a task manager. */
export type TaskManagerConnection = RpcPeer<typeof JobManagerMethods, typeof TaskManagerMethods>;

/** What a task manager told the job manager about itself when it registered. */
export interface TaskManagerInfo {
  /** Registration order, from 0: the name the demo gives it (`task manager 1`). */
  readonly index: number;
  readonly pid: number;
  readonly hostname: string;
  /** Where its control connection came from (`10.77.0.2:40122`). */
  readonly remoteAddress: string;
  readonly location: TaskManagerLocation;
}

/**
 * A task manager that registered with the job manager, as the job side sees it: the
 * `TaskExecutorGateway` the `JobDeployer` deploys through (Flink's `TaskExecutorGateway` over
 * RPC). Every call becomes a control-plane request; descriptors and partition infos travel as
 * their JSON codecs, ids as strings. It remembers which job master each job's tasks report to.
 */
export class RegisteredTaskManager implements TaskExecutorGateway {
  readonly index: number;
  readonly pid: number;
  readonly hostname: string;
  readonly remoteAddress: string;
  readonly location: TaskManagerLocation;
  /** Set once the job manager asked it to shut down: its disconnect is then expected. */
  shutdownRequested = false;

  private readonly connection: TaskManagerConnection;
  private readonly jobMasters = new Map<string, JobMasterGateway>();

  constructor(info: TaskManagerInfo, connection: TaskManagerConnection) {
    this.index = info.index;
    this.pid = info.pid;
    this.hostname = info.hostname;
    this.remoteAddress = info.remoteAddress;
    this.location = info.location;
    this.connection = connection;
  }

  /** `task manager 1 (pid 4242)`. */
  get label(): string {
    return `task manager ${this.index} (pid ${this.pid})`;
  }

  /** `task manager 1 (pid 4242) at 10.77.0.2`: the label with the host it runs on. */
  get labelWithAddress(): string {
    return `${this.label} at ${this.location.host}`;
  }

  /** The job master of `jobId`'s tasks here, once a task of that job was submitted. */
  jobMasterOf(jobId: string): JobMasterGateway | undefined {
    return this.jobMasters.get(jobId);
  }

  async submitTask(
    descriptor: TaskDeploymentDescriptor,
    jobMaster: JobMasterGateway,
  ): Promise<void> {
    this.jobMasters.set(descriptor.jobId.toString(), jobMaster);
    await this.connection.call("submitTask", {
      descriptor: TaskDeploymentDescriptorCodec.toJSON(descriptor),
    });
  }

  async cancelTask(executionAttemptId: ExecutionAttemptID): Promise<void> {
    await this.connection.call("cancelTask", { executionAttemptId: executionAttemptId.toString() });
  }

  async updatePartitions(
    executionAttemptId: ExecutionAttemptID,
    partitionInfos: readonly PartitionInfo[],
  ): Promise<void> {
    await this.connection.call("updatePartitions", {
      executionAttemptId: executionAttemptId.toString(),
      partitionInfos: partitionInfos.map((info) => PartitionInfoCodec.toJSON(info)),
    });
  }

  async releasePartitions(jobId: JobID, partitionIds: readonly ResultPartitionID[]): Promise<void> {
    await this.connection.call("releasePartitions", {
      jobId: jobId.toString(),
      partitionIds: partitionIds.map((id) => id.toString()),
    });
  }

  /**
   * Tells the task manager that the job ended: it closes its TaskExecutor, reports what it held
   * at close, and exits (non-zero when `failed`).
   */
  async shutdown(reason: string, failed: boolean): Promise<ShutdownReport> {
    this.shutdownRequested = true;
    const report = await this.connection.call("shutdown", { reason, failed });
    this.connection.close("the job ended");
    return report;
  }

  /** Drops the connection (the task manager exits when it notices). */
  disconnect(reason: string): void {
    this.shutdownRequested = true;
    this.connection.close(reason);
  }
}
