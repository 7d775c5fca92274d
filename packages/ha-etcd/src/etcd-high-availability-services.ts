import {
  type CheckpointIDCounter,
  type CompletedCheckpointStore,
  checkMaxRetainedCheckpoints,
  type HighAvailabilityServices,
  type JobGraphStore,
  type JobResultStore,
  type LeaderElection,
  type LeaderRetrievalService,
} from "@sluice/runtime-api";
import type { EtcdClient } from "./client/etcd-client.js";
import { EtcdKv } from "./client/etcd-kv.js";
import { EtcdCheckpointIDCounter } from "./etcd-checkpoint-id-counter.js";
import { EtcdCompletedCheckpointStore } from "./etcd-completed-checkpoint-store.js";
import { EtcdJobGraphStore } from "./etcd-job-graph-store.js";
import { EtcdJobResultStore } from "./etcd-job-result-store.js";
import { EtcdLeaderElection } from "./etcd-leader-election.js";
import { EtcdLeaderRetrievalService } from "./etcd-leader-retrieval-service.js";
import { LeadershipFence } from "./leadership-fence.js";
import { checkName, StateFiles } from "./state-files.js";

/** What {@link EtcdHighAvailabilityServices} is made of (the factory reads it from the keys). */
export interface EtcdHighAvailabilityServicesSettings {
  /** The client (its endpoints, timeouts and TLS); the services close it. */
  readonly client: EtcdClient;
  /** `high-availability.cluster-id` without its slashes at either end. */
  readonly clusterId: string;
  /** `high-availability.storageDir`. */
  readonly storageDir: string;
  /** `high-availability.etcd.lease-ttl` in seconds. */
  readonly leaseTtlSeconds: number;
  /** Where the election reports a lost leadership and retried campaigns. */
  readonly onWarning: (message: string) => void;
}

/**
 * The high-availability services on etcd: every key of the cluster lives under
 * `/sluice/<cluster-id>/` and every file under `<storageDir>/<cluster-id>/`. One instance per
 * process: its election is this process's candidacy, and its stores' writes are fenced by that
 * candidacy's leadership.
 */
export class EtcdHighAvailabilityServices implements HighAvailabilityServices {
  /** The cluster's namespace in etcd (`/sluice/<cluster-id>/`). */
  readonly keyPrefix: string;
  /** The cluster's folder under `high-availability.storageDir`. */
  readonly storageFolder: string;

  private readonly kv: EtcdKv;
  private readonly election: EtcdLeaderElection;
  private readonly fence: LeadershipFence;
  private readonly files: StateFiles;
  private readonly retrievers = new Set<LeaderRetrievalService>();
  private closing: Promise<void> | undefined;

  constructor(private readonly settings: EtcdHighAvailabilityServicesSettings) {
    this.keyPrefix = `/sluice/${settings.clusterId}/`;
    this.kv = new EtcdKv(settings.client, this.keyPrefix);
    this.files = new StateFiles(settings.storageDir, settings.clusterId);
    this.storageFolder = this.files.root;
    this.election = new EtcdLeaderElection(this.kv, settings.leaseTtlSeconds, settings.onWarning);
    this.fence = new LeadershipFence(this.kv, this.election);
  }

  getJobManagerLeaderElection(): LeaderElection {
    return this.election;
  }

  getJobManagerLeaderRetriever(): LeaderRetrievalService {
    const retriever = new EtcdLeaderRetrievalService(this.kv);
    this.retrievers.add(retriever);
    return retriever;
  }

  getJobGraphStore(): JobGraphStore {
    return new EtcdJobGraphStore(this.kv, this.fence, this.files);
  }

  getJobResultStore(): JobResultStore {
    return new EtcdJobResultStore(this.kv, this.fence);
  }

  createCompletedCheckpointStore(
    jobId: string,
    maxNumberOfRetainedCheckpoints: number,
  ): CompletedCheckpointStore {
    checkMaxRetainedCheckpoints(maxNumberOfRetainedCheckpoints);
    return new EtcdCompletedCheckpointStore(
      this.kv,
      this.fence,
      this.files,
      checkName("a job id", jobId),
      maxNumberOfRetainedCheckpoints,
    );
  }

  createCheckpointIDCounter(jobId: string): CheckpointIDCounter {
    return new EtcdCheckpointIDCounter(this.kv, this.fence, checkName("a job id", jobId));
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.retrievers].map((retriever) => retriever.stop()));
      await this.election.close();
      this.settings.client.close();
    })();
    return this.closing;
  }

  async closeAndCleanupAllData(): Promise<void> {
    await Promise.all([...this.retrievers].map((retriever) => retriever.stop()));
    await this.election.close();
    await this.kv.deleteRange(`removing the keys of cluster ${this.settings.clusterId}`, {
      key: "",
      prefix: true,
    });
    await this.files.removeFolder();
    await this.close();
  }
}
