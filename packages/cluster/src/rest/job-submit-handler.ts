import { ErrorCodes, isSluiceError } from "@sluice/core";
import { JobGraphCodec } from "@sluice/runtime/plugin";
import type { JobManager } from "../job-manager.js";
import { RestHandlerError } from "./rest-handler-error.js";

/** What `POST /jobs` answers: the job's id and where to follow it. */
export interface JobSubmitResponseBody {
  readonly jobid: string;
  readonly jobUrl: string;
}

/** The HTTP status of a refused submission, by the error's code. */
const STATUS_BY_CODE: Readonly<Record<string, number>> = {
  [ErrorCodes.DESCRIPTOR]: 400,
  [ErrorCodes.CONFIG]: 400,
  [ErrorCodes.TASK_DEPLOYMENT]: 400,
  [ErrorCodes.INVALID_ARGUMENT]: 400,
  [ErrorCodes.HA_FENCED]: 503,
  [ErrorCodes.ILLEGAL_STATE]: 409,
};

/**
 * `POST /jobs` (Flink's `JobSubmitHandler`): the body is `{"jobGraph": <the job graph as
 * JobGraphCodec JSON>}`, as `sluice run` sends it; the job manager runs it on its task managers
 * (after each checked it loads the job's module) unless it runs it already or it ended before
 * ({@link JobManager.submitJob}), and the answer, 202, names the job. A refusal says why, with
 * the error's code (`{"errors": [...], "code": "SLUICE_ERR_..."}`): 400 for a malformed graph or
 * code a task manager cannot load, 409 when no task manager is registered, 503 from a job
 * manager that does not lead.
 */
export async function submitJob(
  jobManager: JobManager,
  body: unknown,
): Promise<JobSubmitResponseBody> {
  const json = (body as { jobGraph?: unknown } | null | undefined)?.jobGraph;
  if (json === undefined) {
    throw new RestHandlerError(
      400,
      'POST /jobs expects {"jobGraph": <the job graph as JobGraphCodec JSON>}, as sluice run sends it',
    );
  }
  try {
    const graph = JobGraphCodec.fromJSON(json);
    await jobManager.submitJob(graph);
    const jobid = graph.jobId.toString();
    return { jobid, jobUrl: `/jobs/${jobid}` };
  } catch (error) {
    if (!isSluiceError(error)) throw error;
    throw new RestHandlerError(STATUS_BY_CODE[error.code] ?? 500, error.message, {
      code: error.code,
    });
  }
}
