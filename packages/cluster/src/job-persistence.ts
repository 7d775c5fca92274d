import {
  Configuration,
  ExecutionCheckpointingOptions,
  FsCheckpointStorage,
  type JobGraph,
  type JobResult,
} from "@sluice/runtime";
import {
  type CompletedCheckpoint,
  discardJobCheckpoints,
  loadCompletedCheckpoint,
  loadSavepoint,
  retainsCheckpointsAfter,
} from "@sluice/runtime/plugin";
import {
  type CheckpointIDCounter,
  CheckpointingOptions,
  type CompletedCheckpointStore,
  FencingTokenError,
  type HighAvailabilityServices,
  type JobResultEntry,
  type JsonValue,
} from "@sluice/runtime-api";
import { jobResultEntryOf } from "./stored-job-result.js";
import { type SubmittedJob, SubmittedJobCodec } from "./submitted-job.js";

/** What {@link JobPersistence} needs of its job manager. */
export interface JobPersistenceContext {
  /** The job manager's configuration: a job's when it was submitted with none of its own. */
  readonly configuration: Configuration;
  /** The high-availability services whose stores keep the jobs. */
  readonly highAvailability: HighAvailabilityServices;
  /** True while the job manager leads: only a leader writes to the stores. */
  isLeader(): boolean;
  /** Reports what does not stop the job manager (a checkpoint that could not be loaded). */
  warn(message: string): void;
}

/**
 * What a job manager keeps of its jobs in the high-availability services (Flink's job graph
 * store, completed-checkpoint store, checkpoint id counter and job result store), and the
 * cleanup protocol of a job that ended for good (Flink's FLIP-194): a **dirty** result first,
 * then the job's other data removed (its checkpoints, their folders under
 * `state.checkpoints.dir` as `externalized-checkpoint-retention` says, the counter, the job
 * graph), then the result marked **clean**. A job manager that dies in between leaves a dirty
 * result, whose cleanup the next leader finishes; no leader ever runs a job with a result again.
 */
export class JobPersistence {
  constructor(private readonly context: JobPersistenceContext) {}

  /** Keeps `job` in the job graph store under its id (fenced: only the leader's write counts). */
  async storeJob(job: SubmittedJob): Promise<void> {
    await this.context.highAvailability
      .getJobGraphStore()
      .putJobGraph(
        job.graph.jobId.toString(),
        SubmittedJobCodec.toJSON(job) as unknown as JsonValue,
      );
  }

  /**
   * The job stored under `jobId`, or `undefined`.
   *
   * @throws DescriptorError naming the field of a damaged record; the store's errors.
   */
  async recoverJob(jobId: string): Promise<SubmittedJob | undefined> {
    const stored = await this.context.highAvailability.getJobGraphStore().recoverJobGraph(jobId);
    return stored === undefined ? undefined : SubmittedJobCodec.fromJSON(stored);
  }

  /** The ids of every stored job, sorted. */
  jobIds(): Promise<readonly string[]> {
    return this.context.highAvailability.getJobGraphStore().getJobIds();
  }

  /** The result entry of `jobId`, dirty or clean, or `undefined` when it never ended for good. */
  storedResult(jobId: string): Promise<JobResultEntry | undefined> {
    return this.context.highAvailability.getJobResultStore().getJobResult(jobId);
  }

  /** The results whose cleanup is still to do. */
  dirtyResults(): Promise<readonly JobResultEntry[]> {
    return this.context.highAvailability.getJobResultStore().getDirtyResults();
  }

  /** The job's own configuration, or the job manager's when it was submitted with none. */
  configurationOf(job: SubmittedJob | undefined): Configuration {
    return job?.configuration === undefined
      ? this.context.configuration
      : new Configuration(job.configuration);
  }

  /**
   * What stores each checkpoint job `jobId` completes in the completed-checkpoint store (a new
   * leader restores the latest), passed to the deployer as `storeCompletedCheckpoint`: the
   * checkpoint coordinator awaits it before it tells any task that the checkpoint completed. It
   * resolves with the checkpoints the store dropped (their folders may go now). Only the leader
   * stores: a job manager that lost its leadership, or whose write the store refuses by fencing,
   * fails the checkpoint with `SLUICE_ERR_HA_FENCED`.
   */
  checkpointStorer(
    job: SubmittedJob,
  ): (checkpoint: CompletedCheckpoint) => Promise<readonly bigint[] | undefined> {
    const { context } = this;
    const jobId = job.graph.jobId.toString();
    const store = this.checkpointStoreOf(job);
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

  /** The job's checkpoint id counter, shared by every leader. */
  checkpointIdCounter(jobId: string): CheckpointIDCounter {
    return this.context.highAvailability.createCheckpointIDCounter(jobId);
  }

  /**
   * The checkpoint a job manager taking `job` over restores: the newest one in the
   * completed-checkpoint store whose `_metadata` can be read (an unreadable one is reported and
   * the next older one tried), else the checkpoint the job was submitted to restore, else none.
   */
  async latestCheckpoint(job: SubmittedJob): Promise<CompletedCheckpoint | undefined> {
    const jobId = job.graph.jobId.toString();
    const stored = await this.checkpointStoreOf(job).getAllCheckpoints();
    const pointers = [...stored.map((checkpoint) => checkpoint.externalPointer)].reverse();
    if (job.restoredFrom !== undefined) pointers.push(job.restoredFrom);
    for (const pointer of pointers) {
      try {
        // What the job was started from by path may be another job's (a savepoint): read as
        // it was at the submission, and never deleted by the job.
        return pointer === job.restoredFrom
          ? await loadSavepoint(
              {
                path: pointer,
                ...(job.allowNonRestoredState === true ? { allowNonRestoredState: true } : {}),
              },
              job.graph,
            )
          : await loadCompletedCheckpoint(pointer, job.graph);
      } catch (error) {
        this.context.warn(
          `job ${jobId}: the checkpoint ${pointer} cannot be restored, trying an older one: ${(error as Error).message}`,
        );
      }
    }
    return undefined;
  }

  /**
   * Job `graph` ended for good: stores its result as dirty, then cleans up (see
   * {@link cleanUp}). Resolves with whether the result was stored; a failed cleanup is left
   * dirty for the next leader and reported.
   *
   * @throws the job result store's errors (`SLUICE_ERR_HA_FENCED` for a deposed leader: it
   *   must not clean up then).
   */
  async recordResult(
    graph: JobGraph,
    result: JobResult & { readonly status: JobResultEntry["status"] },
    job: SubmittedJob | undefined,
  ): Promise<void> {
    const jobId = graph.jobId.toString();
    await this.context.highAvailability
      .getJobResultStore()
      .createDirtyResult(jobResultEntryOf(result));
    try {
      await this.cleanUp(jobId, result.status, job);
    } catch (error) {
      this.context.warn(
        `the cleanup of job ${jobId} is not finished, the next leader finishes it: ${(error as Error).message}`,
      );
    }
  }

  /**
   * Removes what the stores keep of job `jobId` that ended `status` (it has a dirty result):
   * its checkpoint folders under `state.checkpoints.dir` (all of them, or, when
   * `externalized-checkpoint-retention` keeps them, all but the retained ones), its
   * completed-checkpoint store and counter, and its job graph; then marks the result clean.
   * Each step tolerates a previous, interrupted cleanup.
   *
   * @throws the stores' errors (the result stays dirty).
   */
  async cleanUp(
    jobId: string,
    status: JobResultEntry["status"],
    known?: SubmittedJob,
  ): Promise<void> {
    const ha = this.context.highAvailability;
    const job = known ?? (await this.recoverJob(jobId).catch(() => undefined));
    const configuration = this.configurationOf(job);
    const store = this.checkpointStoreOf(job, jobId);
    if (job !== undefined) {
      const retention = configuration.get(
        ExecutionCheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
      );
      let keep: Set<bigint> | undefined = new Set();
      if (retainsCheckpointsAfter(retention, status)) {
        // Unreadable pointers: keep every folder rather than guess which are retained.
        keep = await store
          .getAllCheckpoints()
          .then((all) => new Set(all.map((checkpoint) => checkpoint.checkpointId)))
          .catch(() => undefined);
      }
      if (keep !== undefined) {
        await discardJobCheckpoints(
          FsCheckpointStorage.baseDirectoryOf(configuration),
          job.graph.jobId,
          keep,
        );
      }
    }
    await store.shutdown(true);
    await this.checkpointIdCounter(jobId).shutdown(true);
    await ha.getJobGraphStore().removeJobGraph(jobId);
    await ha.getJobResultStore().markResultAsClean(jobId);
  }

  private checkpointStoreOf(
    job: SubmittedJob | undefined,
    jobId = job?.graph.jobId.toString() ?? "",
  ): CompletedCheckpointStore {
    return this.context.highAvailability.createCompletedCheckpointStore(
      jobId,
      this.configurationOf(job).get(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS),
    );
  }
}
