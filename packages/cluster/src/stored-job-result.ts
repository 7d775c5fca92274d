import { JobID } from "@sluice/core";
import type { JobResult, SerializedThrowable } from "@sluice/runtime";
import { deserializeThrowable, serializeThrowable } from "@sluice/runtime/plugin";
import type { JobResultEntry, JsonObject, JsonValue } from "@sluice/runtime-api";

/**
 * The most bytes of the subtasks' results (JSON) a stored result keeps: the entry lives in the
 * coordination service (etcd bounds a request at 1.5 MiB). Larger results are left out.
 */
export const MAX_STORED_RESULTS_BYTES = 64 * 1024;

/** What a {@link JobResultEntry} of a job this runtime ran keeps in its `details`. */
interface StoredDetails {
  readonly error?: SerializedThrowable;
  readonly failedTask?: string;
  /** By vertex name, in subtask order; absent when larger than {@link MAX_STORED_RESULTS_BYTES}. */
  readonly results?: { readonly [vertex: string]: readonly JsonValue[] };
  readonly checkpoints: {
    readonly completed: number;
    readonly aborted: number;
    readonly restoredFrom?: string;
  };
  readonly restarts: number;
  readonly rerunTasks: readonly string[];
}

/**
 * The job result store's entry of a job that ended for good (Flink's `JobResultEntry`): its
 * status and when, and in `details` the root cause, the failed task, the figures and (when not
 * larger than {@link MAX_STORED_RESULTS_BYTES}) what the subtasks returned.
 */
export function jobResultEntryOf(
  result: JobResult & { readonly status: JobResultEntry["status"] },
  timestamp: number = Date.now(),
): JobResultEntry {
  const results: Record<string, JsonValue[]> = {};
  for (const [vertex, values] of result.results) {
    results[vertex] = values.map((value) => value ?? null);
  }
  const fits = Buffer.byteLength(JSON.stringify(results)) <= MAX_STORED_RESULTS_BYTES;
  const { completed, aborted, restoredFrom } = result.checkpoints;
  const details: StoredDetails = {
    ...(result.error === undefined ? {} : { error: serializeThrowable(result.error) }),
    ...(result.failedTask === undefined ? {} : { failedTask: result.failedTask }),
    ...(fits ? { results } : {}),
    checkpoints: {
      completed,
      aborted,
      ...(restoredFrom === undefined ? {} : { restoredFrom: restoredFrom.toString() }),
    },
    restarts: result.restarts,
    rerunTasks: result.rerunTasks,
  };
  return {
    jobId: result.jobId.toString(),
    status: result.status,
    timestamp,
    details: details as unknown as JsonObject,
  };
}

/**
 * The {@link JobResult} of a stored entry: what `JobManager.getJob` gives for a job that ended
 * for good before (under this or another job manager). It lacks what only the job manager that
 * ran the job knew: where the failed task ran, the checkpoints themselves, the release errors,
 * and the subtasks' results when they were too large to store. An entry written by something
 * else (no or other `details`) gives its status alone.
 */
export function jobResultOfEntry(entry: JobResultEntry): JobResult {
  const details = (
    typeof entry.details === "object" && entry.details !== null && !Array.isArray(entry.details)
      ? entry.details
      : {}
  ) as Partial<StoredDetails>;
  const results = new Map<string, (JsonValue | undefined)[]>();
  if (typeof details.results === "object" && details.results !== null) {
    for (const [vertex, values] of Object.entries(details.results)) {
      if (Array.isArray(values))
        results.set(
          vertex,
          values.map((value) => value ?? undefined),
        );
    }
  }
  const checkpoints = details.checkpoints;
  const restoredFrom =
    typeof checkpoints?.restoredFrom === "string" && /^\d+$/.test(checkpoints.restoredFrom)
      ? BigInt(checkpoints.restoredFrom)
      : undefined;
  const error = details.error;
  return {
    jobId: JobID.fromHex(entry.jobId),
    status: entry.status,
    ...(typeof error?.message === "string" && typeof error.name === "string"
      ? { error: deserializeThrowable(error) }
      : {}),
    ...(typeof details.failedTask === "string" ? { failedTask: details.failedTask } : {}),
    results,
    releaseErrors: [],
    checkpoints: {
      completed: typeof checkpoints?.completed === "number" ? checkpoints.completed : 0,
      aborted: typeof checkpoints?.aborted === "number" ? checkpoints.aborted : 0,
      ...(restoredFrom === undefined ? {} : { restoredFrom }),
    },
    restarts: typeof details.restarts === "number" ? details.restarts : 0,
    rerunTasks: Array.isArray(details.rerunTasks)
      ? details.rerunTasks.filter((task): task is string => typeof task === "string")
      : [],
  };
}
