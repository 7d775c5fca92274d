import { setTimeout as delay } from "node:timers/promises";
import { TimeoutError } from "@sluice/core";
import { CheckpointError, type Configuration } from "@sluice/runtime";
import { ExecutionCheckpointingOptions, type JsonValue } from "@sluice/runtime-api";
import type { RestClusterClient } from "./rest-client.js";

/** How often a savepoint's outcome is asked for. */
const POLL_MS = 200;

/** What `GET /jobs/:jobid/savepoints/:triggerid` answers (Flink's `AsynchronousOperationResult`). */
interface SavepointStatus {
  readonly status: { readonly id: "IN_PROGRESS" | "COMPLETED" };
  readonly operation?: {
    readonly location?: string;
    readonly "failure-cause"?: {
      readonly class?: string;
      readonly code?: string;
      readonly "stack-trace"?: string;
    };
  };
}

/**
 * Triggers the asynchronous savepoint operation `route` (`/jobs/<id>/savepoints` or
 * `/jobs/<id>/stop`) with `body`, then polls its outcome (Flink's `RestClusterClient`
 * `triggerSavepoint` / `stopWithSavepoint`) and resolves with the savepoint's folder. It waits
 * at most the configuration's `execution.checkpointing.timeout` and a minute more: by then the
 * job has aborted a savepoint that did not complete.
 *
 * @throws CheckpointError with the job manager's failure (its class, code and first line);
 *   TimeoutError when no outcome came in time; the client's errors.
 */
export async function triggerAndWaitForSavepoint(
  client: RestClusterClient,
  jobId: string,
  route: string,
  body: JsonValue,
  configuration: Configuration,
): Promise<string> {
  const { "request-id": triggerId } = await client.request<{ "request-id": string }>(
    "POST",
    route,
    body,
  );
  const waitMs = configuration.get(ExecutionCheckpointingOptions.CHECKPOINTING_TIMEOUT) + 60_000;
  const deadline = performance.now() + waitMs;
  for (;;) {
    const answer = await client.get<SavepointStatus>(`/jobs/${jobId}/savepoints/${triggerId}`);
    if (answer.status.id === "COMPLETED") {
      const location = answer.operation?.location;
      if (location !== undefined) return location;
      const cause = answer.operation?.["failure-cause"];
      const firstLine = cause?.["stack-trace"]?.split("\n")[0] ?? cause?.class ?? "unknown";
      throw new CheckpointError(
        `the savepoint of job ${jobId} (trigger ${triggerId}) failed${cause?.code === undefined ? "" : ` (${cause.code})`}: ${firstLine}`,
      );
    }
    if (performance.now() > deadline) {
      throw new TimeoutError(
        `the savepoint of job ${jobId} (trigger ${triggerId}) did not complete within ${waitMs / 1000} s (execution.checkpointing.timeout and a minute); ask GET /jobs/${jobId}/savepoints/${triggerId} later`,
      );
    }
    await delay(POLL_MS);
  }
}
