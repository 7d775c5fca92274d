import { IllegalArgumentError, IllegalStateError } from "@sluice/core";
import {
  type CheckpointIDCounter,
  type CompletedCheckpointStore,
  checkMaxRetainedCheckpoints,
  FencingTokenError,
  type HighAvailabilityServices,
  type JobGraphStore,
  type JobResultEntry,
  type JobResultStore,
  type JsonValue,
  type LeaderContender,
  type LeaderElection,
  type LeaderEndpoints,
  type LeaderInformation,
  type LeaderRetrievalListener,
  type LeaderRetrievalService,
  type StoredCompletedCheckpoint,
} from "@sluice/runtime-api";

/** The one leadership of a cluster without high availability (Flink's default leader id). */
export const EMBEDDED_FENCING_TOKEN = "0";

/**
 * `high-availability.type: none` (Flink's standalone / embedded services): one job manager, which
 * leads as soon as it runs for it, and whose address task managers know from
 * `jobmanager.rpc.address`. The stores live in this process's memory, so they survive a job's
 * restart but not the job manager. Nothing to install, and what Sluice always did.
 */
export class EmbeddedHighAvailabilityServices implements HighAvailabilityServices {
  private readonly election = new EmbeddedLeaderElection();
  private readonly jobGraphs = new Map<string, JsonValue>();
  private readonly checkpoints = new Map<string, StoredCompletedCheckpoint[]>();
  private readonly counters = new Map<string, bigint>();
  private readonly jobResults = new Map<string, { entry: JobResultEntry; clean: boolean }>();

  /**
   * @param jobManagerAddress - where the one job manager serves, for leader retrieval
   *   (`undefined` until a job manager in this process confirmed its leadership).
   */
  constructor(private readonly jobManagerAddress?: string) {}

  getJobManagerLeaderElection(): LeaderElection {
    return this.election;
  }

  getJobManagerLeaderRetriever(): LeaderRetrievalService {
    return new EmbeddedLeaderRetrieval(() => {
      const address = this.election.address ?? this.jobManagerAddress;
      return address === undefined
        ? undefined
        : { ...this.election.endpoints, fencingToken: EMBEDDED_FENCING_TOKEN, address };
    });
  }

  getJobGraphStore(): JobGraphStore {
    const { jobGraphs } = this;
    const fence = (what: string) => this.election.fence(what);
    return {
      putJobGraph: async (jobId, jobGraph) => {
        fence(`storing the job graph of ${jobId}`);
        jobGraphs.set(jobId, jobGraph);
      },
      recoverJobGraph: async (jobId) => jobGraphs.get(jobId),
      removeJobGraph: async (jobId) => {
        fence(`removing the job graph of ${jobId}`);
        jobGraphs.delete(jobId);
      },
      getJobIds: async () => [...jobGraphs.keys()].sort(),
    };
  }

  getJobResultStore(): JobResultStore {
    const { jobResults } = this;
    const fence = (what: string) => this.election.fence(what);
    return {
      createDirtyResult: async (entry) => {
        fence(`storing the result of job ${entry.jobId}`);
        if (jobResults.has(entry.jobId)) {
          throw new IllegalStateError(`job ${entry.jobId} has a stored result already`);
        }
        jobResults.set(entry.jobId, { entry, clean: false });
      },
      markResultAsClean: async (jobId) => {
        fence(`marking the result of job ${jobId} clean`);
        const stored = jobResults.get(jobId);
        if (stored === undefined) {
          throw new IllegalStateError(`job ${jobId} has no stored result to mark clean`);
        }
        stored.clean = true;
      },
      hasJobResultEntry: async (jobId) => jobResults.has(jobId),
      hasDirtyJobResultEntry: async (jobId) => jobResults.get(jobId)?.clean === false,
      hasCleanJobResultEntry: async (jobId) => jobResults.get(jobId)?.clean === true,
      getJobResult: async (jobId) => jobResults.get(jobId)?.entry,
      getDirtyResults: async () =>
        [...jobResults.values()]
          .filter((stored) => !stored.clean)
          .map((stored) => stored.entry)
          .sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0)),
    };
  }

  createCompletedCheckpointStore(
    jobId: string,
    maxNumberOfRetainedCheckpoints: number,
  ): CompletedCheckpointStore {
    checkMaxRetainedCheckpoints(maxNumberOfRetainedCheckpoints);
    const all = () => this.checkpoints.get(jobId) ?? [];
    return {
      maxNumberOfRetainedCheckpoints,
      addCheckpoint: async (checkpoint) => {
        this.election.fence(`adding checkpoint ${checkpoint.checkpointId} of job ${jobId}`);
        const retained = all();
        const latest = retained.at(-1);
        if (latest !== undefined && latest.checkpointId >= checkpoint.checkpointId) {
          throw new IllegalArgumentError(
            `checkpoint ${checkpoint.checkpointId} of job ${jobId} is not newer than the stored checkpoint ${latest.checkpointId}`,
          );
        }
        const next = [...retained, checkpoint];
        const subsumed = next.splice(0, Math.max(0, next.length - maxNumberOfRetainedCheckpoints));
        this.checkpoints.set(jobId, next);
        return subsumed;
      },
      getLatestCheckpoint: async () => all().at(-1),
      getAllCheckpoints: async () => [...all()],
      shutdown: async (discard) => {
        if (discard) this.checkpoints.delete(jobId);
      },
    };
  }

  createCheckpointIDCounter(jobId: string): CheckpointIDCounter {
    const { counters } = this;
    return {
      getAndIncrement: async () => {
        this.election.fence(`incrementing the checkpoint id counter of job ${jobId}`);
        const id = counters.get(jobId) ?? 1n;
        counters.set(jobId, id + 1n);
        return id;
      },
      get: async () => counters.get(jobId) ?? 1n,
      setCount: async (next) => {
        this.election.fence(`setting the checkpoint id counter of job ${jobId}`);
        counters.set(jobId, next);
      },
      shutdown: async (discard) => {
        if (discard) counters.delete(jobId);
      },
    };
  }

  async close(): Promise<void> {
    await this.election.close();
  }

  async closeAndCleanupAllData(): Promise<void> {
    this.jobGraphs.clear();
    this.checkpoints.clear();
    this.counters.clear();
    this.jobResults.clear();
    await this.close();
  }
}

/** Grants leadership at once to the one contender. */
class EmbeddedLeaderElection implements LeaderElection {
  private contender: LeaderContender | undefined;
  private leading = false;
  address: string | undefined;
  endpoints: LeaderEndpoints = {};

  async startLeaderElection(contender: LeaderContender): Promise<void> {
    if (this.contender !== undefined) {
      throw new IllegalStateError("the leader election was started already");
    }
    this.contender = contender;
    this.leading = true;
    // After the caller's await, as a real election would.
    queueMicrotask(() => {
      if (this.leading) contender.grantLeadership(EMBEDDED_FENCING_TOKEN);
    });
  }

  async confirmLeadership(
    fencingToken: string,
    address: string,
    endpoints: LeaderEndpoints = {},
  ): Promise<void> {
    this.fence(`confirming leadership ${fencingToken}`, fencingToken);
    this.address = address;
    this.endpoints = endpoints;
  }

  hasLeadership(fencingToken: string): boolean {
    return this.leading && fencingToken === EMBEDDED_FENCING_TOKEN;
  }

  fence(what: string, fencingToken = EMBEDDED_FENCING_TOKEN): void {
    if (!this.hasLeadership(fencingToken)) {
      throw new FencingTokenError(`${what} was refused: this job manager is not the leader`);
    }
  }

  async close(): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    this.contender?.revokeLeadership();
  }
}

/** Reports the fixed leader once. */
class EmbeddedLeaderRetrieval implements LeaderRetrievalService {
  private started = false;

  constructor(private readonly leader: () => LeaderInformation | undefined) {}

  async start(listener: LeaderRetrievalListener): Promise<void> {
    if (this.started) throw new IllegalStateError("the leader retrieval was started already");
    this.started = true;
    listener.notifyLeaderAddress(this.leader());
  }

  async stop(): Promise<void> {}
}
