import type { JobManager } from "@sluice/cluster";
import { JobID } from "@sluice/core";
import {
  type CompletedCheckpoint,
  type Configuration,
  loadCompletedCheckpoint,
} from "@sluice/runtime";
import { HighAvailabilityOptions } from "@sluice/runtime-api";
import { type WordCountJob, type WordCountOptions, wordCountJob } from "./word-count-job.js";

/** How long a standby job manager waits to be elected (a standby may wait for days). */
const LEADERSHIP_WAIT_MS = 2 ** 31 - 1;

/**
 * How a job manager under high availability says where it runs; the launcher of `--job-managers`
 * maps the leader's address (from leader retrieval) to its process by this line.
 */
export const JOB_MANAGER_AT = "job manager at";
/** How the leader says that the job runs on it (deployed, fresh or recovered). */
export const JOB_RUNS_ON_LEADER = "the job runs on the leader at";

/** Whether `high-availability.type` is other than `none`: job managers elect a leader. */
export function isHighAvailability(configuration: Configuration): boolean {
  return configuration.get(HighAvailabilityOptions.HA_MODE).trim().toLowerCase() !== "none";
}

/**
 * With high availability, a standby waits here until it is elected: only the leader accepts
 * task managers and runs the job. With `none` the job manager leads from the start. Resolves
 * with whether the job managers run under high availability (not `none`).
 */
export async function awaitLeadership(
  jobManager: JobManager,
  configuration: Configuration,
  say: (text: string) => void,
): Promise<boolean> {
  const type = configuration.get(HighAvailabilityOptions.HA_MODE);
  if (!isHighAvailability(configuration)) return false;
  say(
    `${JOB_MANAGER_AT} ${jobManager.url} (pid ${process.pid})${jobManager.fencingToken === undefined ? ": a standby, waiting to be elected leader" : ""} (${HighAvailabilityOptions.HA_MODE.key}: ${type})\n`,
  );
  const token = await jobManager.waitForLeadership(LEADERSHIP_WAIT_MS);
  say(`elected leader (fencing token ${token}); task managers find this job manager now\n`);
  return true;
}

/** The word count a job manager runs, and the previous leader's checkpoint it restores. */
export interface RecoveredJob {
  readonly job: WordCountJob;
  readonly restoreFrom: CompletedCheckpoint | undefined;
  /** Whether it is the previous leader's job (its output may be in the sink's folder). */
  readonly recovered: boolean;
}

/**
 * The word count to run: under high availability, the one the previous leader left in the
 * stores (same job id), restored from its latest stored checkpoint; else a new one.
 */
export async function recoverOrCreateJob(
  jobManager: JobManager,
  highAvailability: boolean,
  jobOptions: WordCountOptions,
  say: (text: string) => void,
): Promise<RecoveredJob> {
  const fresh = () => ({ job: wordCountJob(jobOptions), restoreFrom: undefined, recovered: false });
  if (!highAvailability) return fresh();
  const [previous] = await jobManager.recoverableJobs();
  if (previous === undefined) return fresh();
  const job = wordCountJob(jobOptions, JobID.fromHex(previous.jobId));
  const checkpoint = previous.latestCheckpoint;
  const restoreFrom =
    checkpoint === undefined
      ? undefined
      : await loadCompletedCheckpoint(checkpoint.externalPointer, job.graph);
  say(
    `recovering job ${previous.jobId} left by the previous leader, ${checkpoint === undefined ? "from the start (no checkpoint was stored)" : `from checkpoint ${checkpoint.checkpointId}`}\n`,
  );
  return { job, restoreFrom, recovered: true };
}
