import { describeThrowable, type JobResult } from "@sluice/runtime";
import { serializeThrowable } from "@sluice/runtime/plugin";
import type { JsonValue } from "@sluice/runtime-api";

/** How a job ended, as Flink's REST API names it (`ApplicationStatus`). */
export type ApplicationStatus = "SUCCEEDED" | "FAILED" | "CANCELED" | "UNKNOWN";

/** What the job's checkpoints came to (Sluice: the job result's checkpoint summary). */
export interface JobResultCheckpointsInfo {
  /** Checkpoints every task acknowledged. */
  readonly completed: number;
  /** Checkpoints triggered and aborted. */
  readonly aborted: number;
  /** The checkpoint the last restart restored; `null` without a restart from one. */
  readonly "restored-from": number | null;
  /** Bytes of in-flight data the restored checkpoint held and the restart replayed. */
  readonly "restored-persisted-data-bytes": number | null;
  /** The newest completed checkpoint's longest alignment, in ns; `null` without one. */
  readonly "latest-alignment-duration-nanos": number | null;
}

/** Flink's `JobResult` as the REST API writes it, with Sluice's additions. */
export interface JobExecutionResultInfo {
  readonly id: string;
  readonly "application-status": ApplicationStatus;
  /**
   * What each vertex's subtasks returned (their invokables' results), by vertex name, in subtask
   * order (`null` for a subtask that returned nothing): Sluice's counterpart of Flink's
   * accumulators.
   */
  readonly "accumulator-results": Readonly<Record<string, readonly JsonValue[]>>;
  /** From the job's deployment to its end, in ms. */
  readonly "net-runtime": number;
  /**
   * Why a failed or canceled job ended: its root cause, with (Sluice) its code and a one-line
   * description (`RemoteTransportError [SLUICE_ERR_REMOTE_TRANSPORT]: ...`).
   */
  readonly "failure-cause"?: {
    readonly class: string;
    readonly "stack-trace": string;
    readonly code: string | null;
    readonly description: string;
  };
  /** The task whose failure failed the job (`Name (i/n)#a`), and where it ran (Sluice). */
  readonly "failed-task": string | null;
  readonly "failed-task-location": {
    readonly "resource-id": string;
    readonly host: string;
    readonly "data-port": number;
  } | null;
  /** How often the job failed over (Sluice). */
  readonly restarts: number;
  /** The tasks a failover restarted, `Name (i/n)`, each once (Sluice). */
  readonly "rerun-tasks": readonly string[];
  readonly checkpoints: JobResultCheckpointsInfo;
  /** Errors while releasing the job's partitions or deleting its checkpoints (Sluice). */
  readonly "release-errors": readonly string[];
}

/**
 * `GET /jobs/:jobid/execution-result` (Flink's `JobExecutionResultResponseBody`): `IN_PROGRESS`
 * while the job runs, then `COMPLETED` with its result.
 */
export type JobExecutionResultResponseBody =
  | { readonly status: { readonly id: "IN_PROGRESS" } }
  | {
      readonly status: { readonly id: "COMPLETED" };
      readonly "job-execution-result": JobExecutionResultInfo;
    };

const APPLICATION_STATUS: Readonly<Record<JobResult["status"], ApplicationStatus>> = {
  FINISHED: "SUCCEEDED",
  FAILED: "FAILED",
  CANCELED: "CANCELED",
  SUSPENDED: "UNKNOWN",
};

/** The REST body of an ended job's result; `netRuntimeMs` from its deployment to its end. */
export function jobExecutionResultOf(
  result: JobResult,
  netRuntimeMs: number,
): JobExecutionResultInfo {
  const accumulators: Record<string, JsonValue[]> = {};
  for (const [vertex, values] of result.results) {
    accumulators[vertex] = values.map((value) => value ?? null);
  }
  const { checkpoints, error, failedTaskLocation: location } = result;
  return {
    id: result.jobId.toString(),
    "application-status": APPLICATION_STATUS[result.status],
    "accumulator-results": accumulators,
    "net-runtime": netRuntimeMs,
    ...(error === undefined ? {} : { "failure-cause": failureCauseOf(error) }),
    "failed-task": result.failedTask ?? null,
    "failed-task-location":
      location === undefined
        ? null
        : {
            "resource-id": location.resourceId.toString(),
            host: location.host,
            "data-port": location.dataPort,
          },
    restarts: result.restarts,
    "rerun-tasks": [...result.rerunTasks],
    checkpoints: {
      completed: checkpoints.completed,
      aborted: checkpoints.aborted,
      "restored-from":
        checkpoints.restoredFrom === undefined ? null : Number(checkpoints.restoredFrom),
      "restored-persisted-data-bytes": checkpoints.restoredPersistedDataBytes ?? null,
      "latest-alignment-duration-nanos": checkpoints.latest?.alignmentDurationNanos ?? null,
    },
    "release-errors": result.releaseErrors.map((releaseError) => releaseError.message),
  };
}

function failureCauseOf(error: Error): NonNullable<JobExecutionResultInfo["failure-cause"]> {
  const serialized = serializeThrowable(error);
  return {
    class: serialized.name,
    "stack-trace": error.stack ?? `${error.name}: ${error.message}`,
    code: serialized.code ?? null,
    description: describeThrowable(serialized),
  };
}
