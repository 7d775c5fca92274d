import type { Configuration, JobExecution } from "@sluice/runtime";
import {
  CheckpointingOptions,
  type CompletedCheckpointStore,
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

/** How often a job's latest completed checkpoint is looked at to be stored. */
const CHECKPOINT_STORE_POLL_MS = 25;

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
   * Puts each checkpoint the job completes into the completed-checkpoint store (a new leader
   * restores the latest), and removes the job from the stores once it ended for good. A job
   * manager that is closing or lost its leadership leaves them for the next leader.
   *
   * @param restored - the checkpoint the job was restored from: the store holds it already.
   */
  storeCheckpointsOf(execution: JobExecution, jobId: string, restored?: bigint): void {
    const { context } = this;
    const store = this.checkpointStoreOf(jobId);
    let stored: bigint | undefined = restored;
    let writing: Promise<void> = Promise.resolve();
    const timer = setInterval(() => {
      const latest = execution.checkpointCoordinator?.latestCompletedCheckpoint;
      if (latest === undefined || (stored !== undefined && latest.checkpointId <= stored)) return;
      if (!context.isLeader()) return;
      stored = latest.checkpointId;
      writing = writing.then(() =>
        store
          .addCheckpoint({
            checkpointId: latest.checkpointId,
            timestamp: latest.timestamp,
            externalPointer: latest.metadataPath,
          })
          .then(
            () => undefined,
            (error: Error) =>
              context.warn(
                `could not store checkpoint ${latest.checkpointId} of job ${jobId}: ${error.message}`,
              ),
          ),
      );
    }, CHECKPOINT_STORE_POLL_MS);
    timer.unref();
    void execution.terminated.then(async () => {
      clearInterval(timer);
      await writing;
      if (context.isClosing() || !context.isLeader()) return;
      try {
        await context.highAvailability.getJobGraphStore().removeJobGraph(jobId);
        await store.shutdown(true);
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
