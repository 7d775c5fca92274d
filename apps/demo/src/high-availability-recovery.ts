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
  if (type.trim().toLowerCase() === "none") return false;
  if (jobManager.fencingToken === undefined) {
    say(
      `standby job manager at ${jobManager.url}: waiting to be elected leader (${HighAvailabilityOptions.HA_MODE.key}: ${type})\n`,
    );
  }
  const token = await jobManager.waitForLeadership(LEADERSHIP_WAIT_MS);
  say(`elected leader (fencing token ${token}); task managers find this job manager now\n`);
  return true;
}

/** The word count a job manager runs, and the previous leader's checkpoint it restores. */
export interface RecoveredJob {
  readonly job: WordCountJob;
  readonly restoreFrom: CompletedCheckpoint | undefined;
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
  const fresh = () => ({ job: wordCountJob(jobOptions), restoreFrom: undefined });
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
  return { job, restoreFrom };
}
