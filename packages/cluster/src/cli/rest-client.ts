import { ConfigurationError, IllegalStateError, TimeoutError } from "@sluice/core";
import type { Configuration } from "@sluice/runtime";
import { deserializeThrowable } from "@sluice/runtime/plugin";
import { type JsonValue, RestOptions } from "@sluice/runtime-api";
import { findRestEndpointLeader } from "../find-job-manager-leader.js";
import type { HostAndPort } from "../job-manager.js";
import { DISTRIBUTION_LOADER } from "./distribution.js";
import { parseHostAndPort } from "./host-and-port.js";

/** How long one request may take before the client gives up. */
const REQUEST_TIMEOUT_MS = 30_000;
/** How long, with high availability, the client waits for a leader's REST endpoint. */
const LEADER_RETRIEVAL_TIMEOUT_MS = 30_000;

/**
 * A client of the job manager's REST endpoint (Flink's `RestClusterClient`), for the `sluice run`,
 * `list` and `cancel` commands: JSON over HTTP, each request bounded in time, an error answer
 * turned into an IllegalStateError that names the route, the status and what the endpoint said
 * (Flink's `{"errors": [...]}`) and carries the endpoint's error code when it sends one; an
 * endpoint that cannot be reached is a ConfigurationError.
 */
export class RestClusterClient {
  /** `http://host:port`. */
  readonly url: string;

  constructor(address: HostAndPort) {
    const host = address.host.includes(":") ? `[${address.host}]` : address.host;
    this.url = `http://${host}:${address.port}`;
  }

  /**
   * The endpoint `--jobmanager` names; else, with high availability, the leading job manager's,
   * as leader retrieval finds it (Flink's `RestClusterClient` follows the REST endpoint's leader
   * the same way); else the configuration's `rest.address` (or `jobmanager.rpc.address`, else
   * 127.0.0.1) and `rest.port`. Leader retrieval's warnings go to `stderr`.
   *
   * @throws ConfigurationError for a malformed `--jobmanager`; TimeoutError when, with high
   *   availability, no leader published its REST endpoint within 30 s; the high-availability
   *   services' errors.
   */
  static async of(
    configuration: Configuration,
    jobManager: string | undefined,
    stderr?: NodeJS.WritableStream,
  ): Promise<RestClusterClient> {
    if (jobManager !== undefined) {
      return new RestClusterClient(parseHostAndPort(jobManager, "--jobmanager"));
    }
    const leader = await findRestEndpointLeader(
      configuration,
      LEADER_RETRIEVAL_TIMEOUT_MS,
      (message) => stderr?.write(`warning: ${message}\n`),
      DISTRIBUTION_LOADER,
    );
    if (leader !== undefined) return new RestClusterClient(leader);
    return new RestClusterClient({
      host: configuration.getOptional(RestOptions.ADDRESS) ?? "127.0.0.1",
      port: configuration.get(RestOptions.PORT),
    });
  }

  /** `GET path`. */
  get<T>(path: string): Promise<T> {
    return this.request<T>("GET", path);
  }

  /** `method path` with a JSON body. */
  async request<T>(method: string, path: string, body?: JsonValue): Promise<T> {
    const route = `${method} ${this.url}${path}`;
    let response: Response;
    try {
      response = await fetch(`${this.url}${path}`, {
        method,
        // A state-changing request is JSON, body or not: the endpoint refuses other types, as a
        // browser's cross-site form could send them.
        ...(method === "GET"
          ? {}
          : {
              body: JSON.stringify(body ?? {}),
              headers: { "content-type": "application/json" },
            }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      if ((error as Error)?.name === "TimeoutError") {
        throw new TimeoutError(`${route} got no answer within ${REQUEST_TIMEOUT_MS} ms`, {
          cause: error,
        });
      }
      throw new ConfigurationError(
        `cannot reach the job manager's REST endpoint (${route}): ${describeCause(error)}; is a job manager running there (rest.address, rest.port, or --jobmanager)?`,
        { cause: error },
      );
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === "" ? {} : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const { errors, code } = (parsed ?? {}) as { errors?: unknown; code?: unknown };
      const said = Array.isArray(errors) ? errors.join("; ") : text.slice(0, 500);
      const message = `${route} answered ${response.status}: ${said}`;
      // The endpoint's error code, when it sends one, is the error's: a refused job's code names
      // the cause (a job module a task manager cannot load, a job manager that does not lead).
      if (typeof code === "string") throw deserializeThrowable({ name: "Error", code, message });
      throw new IllegalStateError(message);
    }
    if (parsed === undefined) {
      throw new IllegalStateError(
        `${route} answered ${response.status} with no JSON: ${text.slice(0, 200)}`,
      );
    }
    return parsed as T;
  }
}

/** The innermost message of a fetch failure (`fetch failed` hides the socket error in `cause`). */
function describeCause(error: unknown): string {
  let current = error as { message?: string; cause?: unknown } | undefined;
  while (current?.cause !== undefined) current = current.cause as typeof current;
  return current?.message ?? String(error);
}
