import type { CompletedCheckpoint, Configuration, JobExecution } from "@sluice/runtime";
import {
  CheckpointingOptions,
  type CompletedCheckpointStore,
  FencingTokenError,
  type HighAvailabilityServices,
  type JsonValue,
  type StoredCompletedCheckpoint,
} from "@sluice/runtime-api";

/** A job the previous leader ran, as the high-availability stores keep it. */
export interface RecoverableJob {
  /** The job's id (rebuild the graph with it: the checkpoint belongs to it). */
  readonly jobId: string;
  /** The `recoveryDescription` it was deployed with. */
  readonly description: JsonValue;
  /** Its latest completed checkpoint, if one completed: restore from its `externalPointer`. */
  readonly latestCheckpoint: StoredCompletedCheckpoint | undefined;
}

/** What {@link JobPersistence} needs of its job manager. */
export interface JobPersistenceContext {
  /** The configuration (`state.checkpoints.num-retained` bounds each job's store). */
  readonly configuration: Configuration;
  /** The high-availability services whose stores keep the jobs. */
  readonly highAvailability: HighAvailabilityServices;
  /** True while the job manager leads: only a leader writes to the stores. */
  isLeader(): boolean;
  /** True once the job manager is closing: it leaves the stores for the next leader. */
  isClosing(): boolean;
  /** Reports a store that could not be written. */
  warn(message: string): void;
}

/**
 * What a job manager keeps of its recoverable jobs in the high-availability services (Flink's
 * job graph store and completed-checkpoint store): each job's recovery description, and its
 * completed checkpoints as they complete, so that a new leader can redeploy the jobs the
 * previous one did not finish, each from its latest checkpoint.
 */
export class JobPersistence {
  private readonly context: JobPersistenceContext;

  constructor(context: JobPersistenceContext) {
    this.context = context;
  }

  /** Keeps `description` under `jobId` in the job graph store. */
  async putJob(jobId: string, description: JsonValue): Promise<void> {
    await this.context.highAvailability.getJobGraphStore().putJobGraph(jobId, description);
  }

  /** The jobs in the job graph store, each with its latest completed checkpoint. */
  async recoverableJobs(): Promise<readonly RecoverableJob[]> {
    const store = this.context.highAvailability.getJobGraphStore();
    const jobs: RecoverableJob[] = [];
    for (const jobId of await store.getJobIds()) {
      const description = await store.recoverJobGraph(jobId);
      if (description === undefined) continue;
      const latestCheckpoint = await this.checkpointStoreOf(jobId).getLatestCheckpoint();
      jobs.push({ jobId, description, latestCheckpoint });
    }
    return jobs;
  }

  /**
   * What stores each checkpoint job `jobId` completes in the completed-checkpoint store (a new
   * leader restores the latest), passed to the deployer as `storeCompletedCheckpoint`: the
   * checkpoint coordinator awaits it before it tells any task that the checkpoint completed.
   * Only the leader stores; a job manager that lost its leadership fails the checkpoint, and so
   * does a store that refuses the write (a deposed leader's fencing token).
   */
  checkpointStorer(
    jobId: string,
  ): (checkpoint: CompletedCheckpoint) => Promise<readonly bigint[] | undefined> {
    const { context } = this;
    const store = this.checkpointStoreOf(jobId);
    return async (checkpoint) => {
      if (!context.isLeader()) {
        throw new FencingTokenError(
          `checkpoint ${checkpoint.checkpointId} of job ${jobId} is not stored: this job manager is not the leader`,
        );
      }
      const dropped = await store.addCheckpoint({
        checkpointId: checkpoint.checkpointId,
        timestamp: checkpoint.timestamp,
        externalPointer: checkpoint.metadataPath,
      });
      return dropped.map((stored) => stored.checkpointId);
    };
  }

  /**
   * Removes the job from the stores once it ended for good. A job manager that is closing or
   * lost its leadership leaves them for the next leader.
   */
  removeWhenEnded(execution: JobExecution, jobId: string): void {
    const { context } = this;
    void execution.terminated.then(async () => {
      if (context.isClosing() || !context.isLeader()) return;
      try {
        await context.highAvailability.getJobGraphStore().removeJobGraph(jobId);
        await this.checkpointStoreOf(jobId).shutdown(true);
      } catch (error) {
        context.warn(
          `could not remove job ${jobId} from the high-availability stores: ${(error as Error).message}`,
        );
      }
    });
  }

  private checkpointStoreOf(jobId: string): CompletedCheckpointStore {
    return this.context.highAvailability.createCompletedCheckpointStore(
      jobId,
      this.context.configuration.get(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS),
    );
  }
}
