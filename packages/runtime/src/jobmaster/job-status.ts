/**
 * The states of a job (Flink's `JobStatus`, the ones this runtime reaches). SUSPENDED is
 * terminal on this job manager only: it lost its leadership (or closed under high availability)
 * and another job manager takes the job over from its latest stored checkpoint.
 */
export type JobStatus =
  | "CREATED"
  | "RUNNING"
  | "RESTARTING"
  | "FAILING"
  | "CANCELLING"
  | "FINISHED"
  | "FAILED"
  | "CANCELED"
  | "SUSPENDED";

/**
 * Whether a job in `status` is done for good (Flink's `JobStatus.isGloballyTerminalState`):
 * FINISHED, FAILED or CANCELED. A SUSPENDED job ended only on this job manager (it lost its
 * leadership): another one takes it over.
 */
export function isGloballyTerminal(
  status: JobStatus,
): status is "FINISHED" | "FAILED" | "CANCELED" {
  return status === "FINISHED" || status === "FAILED" || status === "CANCELED";
}

/**
 * Told of every change of a job's status, as it happens (Flink's `JobStatusListener`). For
 * FAILING and RESTARTING, `cause` is the failure that led there: a job that fails over again
 * and again says why each time, instead of looping silently.
 */
export type JobStatusListener = (status: JobStatus, cause: Error | undefined) => void;
