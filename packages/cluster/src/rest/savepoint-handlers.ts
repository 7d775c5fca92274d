/**
 * The REST endpoint's savepoint routes, in Flink's shapes (Flink's `SavepointHandlers` and
 * `StopWithSavepointHandlers`): a savepoint or a stop-with-savepoint is an asynchronous
 * operation, triggered by one request that answers a trigger id at once, and polled with it.
 *
 * - `POST /jobs/:jobid/savepoints` `{"target-directory"?, "cancel-job"?, "triggerId"?,
 *   "formatType"?}` → 202 `{"request-id": <trigger id>}`;
 * - `POST /jobs/:jobid/stop` `{"targetDirectory"?, "drain"?, "triggerId"?, "formatType"?}` → 202
 *   `{"request-id": <trigger id>}`;
 * - `GET /jobs/:jobid/savepoints/:triggerid` → `{"status": {"id": "IN_PROGRESS"}}`, then
 *   `{"status": {"id": "COMPLETED"}, "operation": {"location": <folder>}}` or
 *   `{"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {"class", "code",
 *   "stack-trace"}}}`.
 */
import { randomBytes } from "node:crypto";
import type { JobExecution } from "@sluice/runtime";
import type { CompletedOperationCache } from "./completed-operation-cache.js";
import type { ExecutionGraphInfo } from "./execution-graph-info.js";
import { RestHandlerError } from "./rest-handler-error.js";
import type { RestRoute } from "./rest-router.js";

/** What the savepoint routes read and act on. */
export interface SavepointRouteContext {
  /** The job `jid` the endpoint shows; throws the REST answer for one it does not. */
  readonly jobOf: (jid: string | undefined) => ExecutionGraphInfo;
  /** The savepoint operations, by `<job id>:<trigger id>`; each resolves with the folder. */
  readonly operations: CompletedOperationCache<string>;
}

/** A trigger id: 32 hex digits (Flink's `TriggerId`). */
const TRIGGER_ID = /^[0-9a-f]{32}$/;

/** The routes of savepoints and stop-with-savepoint. */
export function savepointRoutes(context: SavepointRouteContext): RestRoute[] {
  const { jobOf, operations } = context;
  /** The running job `jid`, or the reason it cannot take a savepoint. */
  const runningJob = (jid: string | undefined): JobExecution => {
    const job = jobOf(jid);
    const execution = job.job;
    if (execution === undefined) {
      throw new RestHandlerError(409, `${job.whyNotRunning()}: it takes no savepoint`);
    }
    return execution;
  };
  /** Registers `operation` under the body's trigger id (or a new one) and answers it. */
  const trigger = (jid: string, body: Fields, operation: () => Promise<string>) => {
    const given = body.string("triggerId");
    if (given !== undefined && !TRIGGER_ID.test(given)) {
      throw new RestHandlerError(
        400,
        `triggerId must be 32 hex digits, got ${JSON.stringify(given)}`,
      );
    }
    const format = body.string("formatType");
    if (format !== undefined && format !== "CANONICAL") {
      throw new RestHandlerError(
        400,
        `formatType ${JSON.stringify(format)} is not supported: Sluice writes one savepoint format (CANONICAL)`,
      );
    }
    const triggerId = given ?? randomBytes(16).toString("hex");
    // A retried request with the same trigger id gets the operation it started (Flink's
    // idempotent triggers): no second savepoint.
    operations.register(`${jid}:${triggerId}`, operation);
    return { status: 202, body: { "request-id": triggerId } };
  };
  return [
    {
      method: "POST",
      path: "/jobs/:jobid/savepoints",
      stateChanging: true,
      hasBody: true,
      handle: ({ params, body }) => {
        const execution = runningJob(params.jobid);
        const fields = new Fields(body);
        const target = fields.string("target-directory");
        const cancelJob = fields.boolean("cancel-job") ?? false;
        return trigger(execution.jobId.toString(), fields, () =>
          execution.triggerSavepoint(target, { cancelJob }),
        );
      },
    },
    {
      method: "POST",
      path: "/jobs/:jobid/stop",
      stateChanging: true,
      hasBody: true,
      handle: ({ params, body }) => {
        const execution = runningJob(params.jobid);
        const fields = new Fields(body);
        const target = fields.string("targetDirectory");
        const drain = fields.boolean("drain") ?? false;
        return trigger(execution.jobId.toString(), fields, () =>
          execution.stopWithSavepoint(target, { drain }),
        );
      },
    },
    {
      method: "GET",
      path: "/jobs/:jobid/savepoints/:triggerid",
      handle: ({ params }) => {
        const outcome = operations.get(`${params.jobid}:${params.triggerid}`);
        if (outcome === undefined) {
          throw new RestHandlerError(
            404,
            `there is no savepoint operation with trigger id ${params.triggerid} for job ${params.jobid} (or its outcome is older than rest.async.store-duration)`,
          );
        }
        switch (outcome.status) {
          case "IN_PROGRESS":
            return { body: { status: { id: "IN_PROGRESS" } } };
          case "SUCCESS":
            return {
              body: { status: { id: "COMPLETED" }, operation: { location: outcome.result } },
            };
          case "FAILURE": {
            const error = outcome.error as Error & { code?: unknown };
            return {
              body: {
                status: { id: "COMPLETED" },
                operation: {
                  "failure-cause": {
                    class: error.name,
                    ...(typeof error.code === "string" ? { code: error.code } : {}),
                    "stack-trace": error.stack ?? `${error.name}: ${error.message}`,
                  },
                },
              },
            };
          }
        }
      },
    },
  ];
}

/** A request body's optional fields, each checked for its type (400 otherwise). */
class Fields {
  private readonly body: Record<string, unknown>;

  constructor(body: unknown) {
    if (body === undefined || body === null) {
      this.body = {};
      return;
    }
    if (typeof body !== "object" || Array.isArray(body)) {
      throw new RestHandlerError(400, "the request body must be a JSON object");
    }
    this.body = body as Record<string, unknown>;
  }

  string(name: string): string | undefined {
    const value = this.body[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "string" || value === "") {
      throw new RestHandlerError(
        400,
        `${name} must be a non-empty string, got ${JSON.stringify(value)}`,
      );
    }
    return value;
  }

  boolean(name: string): boolean | undefined {
    const value = this.body[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "boolean") {
      throw new RestHandlerError(
        400,
        `${name} must be true or false, got ${JSON.stringify(value)}`,
      );
    }
    return value;
  }
}
