import type { JsonValue } from "../descriptors/json-fields.js";

/** The globally terminal states a job result records. */
export type GloballyTerminalJobStatus = "FINISHED" | "FAILED" | "CANCELED";

/** The outcome of a job that reached a globally terminal state (Flink's `JobResultEntry`). */
export interface JobResultEntry {
  /** The job's id. */
  readonly jobId: string;
  /** How it ended. */
  readonly status: GloballyTerminalJobStatus;
  /** When it ended (ms since the epoch). */
  readonly timestamp: number;
  /** Anything else the job side wants to keep of the outcome (JSON), e.g. the root cause. */
  readonly details?: JsonValue;
}

/**
 * The results of the jobs that reached a globally terminal state (Flink's `JobResultStore`),
 * kept where every job manager of the cluster finds them. A job manager writes a **dirty** entry
 * as soon as a job ended for good, then cleans the job's other high-availability data (its job
 * graph, checkpoints and checkpoint id counter) and marks the entry **clean**. A newly elected
 * leader therefore never runs a job again that has an entry: a dirty one only has its cleanup
 * finished, a clean one is done. Writes are fenced: only the current leader's succeed.
 */
export interface JobResultStore {
  /**
   * Records that job `entry.jobId` ended for good, its cleanup still to do.
   *
   * @throws FencingTokenError when this job manager is not the current leader.
   * @throws IllegalStateError when the job has an entry already.
   */
  createDirtyResult(entry: JobResultEntry): Promise<void>;
  /**
   * Marks the entry of `jobId` clean: its other high-availability data is gone.
   *
   * @throws FencingTokenError when this job manager is not the current leader.
   * @throws IllegalStateError when the job has no entry.
   */
  markResultAsClean(jobId: string): Promise<void>;
  /** True when job `jobId` has an entry, dirty or clean. */
  hasJobResultEntry(jobId: string): Promise<boolean>;
  /** True when job `jobId` has a dirty entry (its cleanup is still to do). */
  hasDirtyJobResultEntry(jobId: string): Promise<boolean>;
  /** True when job `jobId` has a clean entry. */
  hasCleanJobResultEntry(jobId: string): Promise<boolean>;
  /** The entry of job `jobId`, dirty or clean, or `undefined` when it has none. */
  getJobResult(jobId: string): Promise<JobResultEntry | undefined>;
  /** Every dirty entry, sorted by job id: the cleanups a new leader finishes. */
  getDirtyResults(): Promise<readonly JobResultEntry[]>;
}
