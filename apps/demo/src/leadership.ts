import { createHash } from "node:crypto";
import type { JobManager } from "@sluice/cluster";
import { JobID } from "@sluice/core";
import type { Configuration } from "@sluice/runtime";
import { HighAvailabilityOptions } from "@sluice/runtime-api";

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

/**
 * The word count's job id under high availability: derived from `high-availability.cluster-id`,
 * as Flink's application mode fixes it, so that every job manager that becomes leader submits
 * the same job and finds the one the library took over (or its stored result) instead of
 * starting it again. Without high availability, `undefined` (a random id).
 */
export function fixedJobIdOf(configuration: Configuration): JobID | undefined {
  if (!isHighAvailability(configuration)) return undefined;
  const clusterId = configuration.get(HighAvailabilityOptions.HA_CLUSTER_ID);
  return JobID.fromHex(createHash("sha256").update(clusterId).digest("hex").slice(0, 32));
}
