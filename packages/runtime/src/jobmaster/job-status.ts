/** The states of a job (Flink's `JobStatus`, the ones this runtime reaches). */
export type JobStatus =
  | "CREATED"
  | "RUNNING"
  | "RESTARTING"
  | "FAILING"
  | "CANCELLING"
  | "FINISHED"
  | "FAILED"
  | "CANCELED";

/**
 * Told of every change of a job's status, as it happens (Flink's `JobStatusListener`). For
 * FAILING and RESTARTING, `cause` is the failure that led there: a job that fails over again
 * and again says why each time, instead of looping silently.
 */
export type JobStatusListener = (status: JobStatus, cause: Error | undefined) => void;
