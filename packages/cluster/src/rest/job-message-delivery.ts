import { ErrorCodes, TimeoutError } from "@sluice/core";
import type { TaskExecutorGateway } from "@sluice/runtime/plugin";
import type { JsonValue } from "@sluice/runtime-api";
import type { ExecutionGraphInfo } from "./execution-graph-info.js";
import { RestHandlerError } from "./rest-handler-error.js";

/** What one TaskExecutor answered to a job message. */
export interface JobMessageReply {
  /** The TaskExecutor's resource id. */
  readonly "taskmanager-id": string;
  /** Where it runs: `host:dataPort`. */
  readonly endpoint: string;
  /** Its handler's reply (`null` when it returned nothing); absent when it failed. */
  readonly reply?: JsonValue;
  /** Why it failed: the error's code (`SLUICE_ERR_…`, when it has one) and message. */
  readonly error?: { readonly code: string | null; readonly message: string };
}

/** `POST /jobs/:jobid/messages/:name`: every TaskExecutor's reply. */
export interface JobMessageReplies {
  readonly replies: readonly JobMessageReply[];
}

/**
 * Sends job message `name` with `payload` to every TaskExecutor that runs a task of `job` now
 * (each once, all at once) and collects their replies. A job whose code runs on several task
 * managers gets the message on each: their replies come back side by side.
 *
 * @param timeoutMs - how long a TaskExecutor may take to reply (`heartbeat.timeout`; the control
 *   plane bounds its requests by the same).
 * @throws RestHandlerError 409 when the job is not deployed yet, ended, or none of its tasks runs now; 400 when every
 *   TaskExecutor refused the message as unknown or its payload as invalid
 *   (`SLUICE_ERR_INVALID_ARGUMENT`); 502 when any other delivery failed. The body carries every
 *   reply either way.
 */
export async function deliverJobMessage(
  job: ExecutionGraphInfo,
  name: string,
  payload: JsonValue,
  timeoutMs: number,
): Promise<JobMessageReplies> {
  const execution = job.job;
  if (execution === undefined) {
    throw new RestHandlerError(409, `${job.whyNotRunning()}: it takes no message`);
  }
  const gateways = job.taskExecutors();
  if (gateways.length === 0) {
    throw new RestHandlerError(
      409,
      `no task of job ${job.jid} runs now (${job.state}): send the message once it runs`,
    );
  }
  const replies = await Promise.all(
    gateways.map((gateway) => replyOf(gateway, execution.jobId, name, payload, timeoutMs)),
  );
  const failed = replies.filter((reply) => reply.error !== undefined);
  if (failed.length === 0) return { replies };
  const refused = failed.every((reply) => reply.error?.code === ErrorCodes.INVALID_ARGUMENT);
  throw new RestHandlerError(
    refused ? 400 : 502,
    `job message "${name}" of job ${job.jid}: ${failed.length} of ${replies.length} task managers failed: ${failed
      .map((reply) => `${reply.endpoint}: ${reply.error?.message}`)
      .join("; ")}`,
    { replies },
  );
}

async function replyOf(
  gateway: TaskExecutorGateway,
  jobId: Parameters<NonNullable<TaskExecutorGateway["deliverJobMessage"]>>[0],
  name: string,
  payload: JsonValue,
  timeoutMs: number,
): Promise<JobMessageReply> {
  const { location } = gateway;
  const who = {
    "taskmanager-id": location.resourceId.toString(),
    endpoint: `${location.host}:${location.dataPort}`,
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    if (gateway.deliverJobMessage === undefined) {
      throw new Error(`the TaskExecutor at ${who.endpoint} takes no job messages`);
    }
    const reply = await Promise.race([
      gateway.deliverJobMessage(jobId, name, payload),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new TimeoutError(
                `the TaskExecutor at ${who.endpoint} did not answer within ${timeoutMs} ms`,
              ),
            ),
          timeoutMs,
        );
      }),
    ]);
    return { ...who, reply };
  } catch (error) {
    const code = (error as { code?: unknown })?.code;
    return {
      ...who,
      error: {
        code: typeof code === "string" ? code : null,
        message: (error as Error)?.message ?? String(error),
      },
    };
  } finally {
    clearTimeout(timer);
  }
}
