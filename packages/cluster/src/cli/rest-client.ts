import { ConfigurationError, IllegalStateError, TimeoutError } from "@sluice/core";
import type { Configuration } from "@sluice/runtime";
import { deserializeThrowable } from "@sluice/runtime/plugin";
import { type JsonValue, RestOptions } from "@sluice/runtime-api";
import { hostAndPortOf } from "../find-job-manager-leader.js";
import type { HostAndPort } from "../job-manager.js";
import { LeaderRetriever } from "../leader-retriever.js";
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
 * endpoint that cannot be reached is a ConfigurationError. A client {@link of} made under high
 * availability follows the leader for as long as it is open: one leader retrieval, kept until
 * {@link close}.
 */
export class RestClusterClient {
  private address: string;
  /** The leader retrieval it follows; `undefined` for a fixed endpoint. */
  private following: LeaderRetriever | undefined;
  /** Aborts the requests in flight to the endpoint the leader left. */
  private leaderChange = new AbortController();

  /** A client of the endpoint at `address`. */
  constructor(address: HostAndPort) {
    this.address = urlOf(address);
  }

  /**
   * `http://host:port`: the endpoint the requests go to now (the latest leader's, for a client
   * that follows the leader).
   */
  get url(): string {
    return this.address;
  }

  /**
   * The endpoint `--jobmanager` names; else, with high availability, the leading job manager's:
   * the client keeps one leader retrieval open and sends each request to the endpoint the latest
   * leader published (Flink's `RestClusterClient` follows the REST endpoint's leader the same
   * way), until {@link close}; else the configuration's `rest.address` (or
   * `jobmanager.rpc.address`, else 127.0.0.1) and `rest.port`. Leader retrieval's warnings go to
   * `stderr`.
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
    const retriever = await LeaderRetriever.open(
      configuration,
      (message) => stderr?.write(`warning: ${message}\n`),
      DISTRIBUTION_LOADER,
    );
    if (retriever === undefined) {
      return new RestClusterClient({
        host: configuration.getOptional(RestOptions.ADDRESS) ?? "127.0.0.1",
        port: configuration.get(RestOptions.PORT),
      });
    }
    try {
      const leader = await retriever.awaitLeader(
        (found) => found.restAddress !== undefined,
        LEADER_RETRIEVAL_TIMEOUT_MS,
        "no leading job manager published a REST endpoint",
      );
      const client = new RestClusterClient(hostAndPortOf(leader.restAddress as string));
      client.follow(retriever);
      return client;
    } catch (error) {
      await retriever.close();
      throw error;
    }
  }

  /**
   * Stops following the leader (closes the leader retrieval); nothing for a client of a fixed
   * endpoint. The client still sends requests to the endpoint it followed last. Idempotent.
   */
  async close(): Promise<void> {
    const retriever = this.following;
    this.following = undefined;
    await retriever?.close();
  }

  /** The error of request `route`, aborted because the leader changed while it was in flight. */
  private droppedForNewLeader(route: string, cause: unknown): IllegalStateError {
    return new IllegalStateError(
      `${route} was dropped: the leading job manager changed, its REST endpoint is ${this.url} now`,
      { cause },
    );
  }

  /**
   * Sends the requests to every REST endpoint that a new leader publishes; the requests in
   * flight to the one it left fail at once (they would wait for a dead or paused leader).
   */
  private follow(retriever: LeaderRetriever): void {
    this.following = retriever;
    retriever.onChange(() => {
      const restAddress = retriever.leader?.restAddress;
      // No leader, or one without a REST endpoint yet: the requests go on to the last one.
      if (restAddress === undefined) return;
      const address = urlOf(hostAndPortOf(restAddress));
      if (address === this.address) return;
      this.address = address;
      this.leaderChange.abort();
      this.leaderChange = new AbortController();
    });
  }

  /** `GET path`. */
  get<T>(path: string): Promise<T> {
    return this.request<T>("GET", path);
  }

  /** `method path` with a JSON body. */
  async request<T>(method: string, path: string, body?: JsonValue): Promise<T> {
    const route = `${method} ${this.url}${path}`;
    const leaderChange = this.leaderChange.signal;
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
        signal: AbortSignal.any([AbortSignal.timeout(REQUEST_TIMEOUT_MS), leaderChange]),
      });
    } catch (error) {
      if (leaderChange.aborted) throw this.droppedForNewLeader(route, error);
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
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (leaderChange.aborted) throw this.droppedForNewLeader(route, error);
      throw error;
    }
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

/**
 * Runs `use` with a client of {@link RestClusterClient.of}, and closes the client (its leader
 * retrieval) once `use` is done, whatever its outcome.
 */
export async function usingRestClient<T>(
  configuration: Configuration,
  jobManager: string | undefined,
  stderr: NodeJS.WritableStream,
  use: (client: RestClusterClient) => Promise<T>,
): Promise<T> {
  const client = await RestClusterClient.of(configuration, jobManager, stderr);
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

/** `http://host:port` of `address` (an IPv6 host in brackets). */
function urlOf(address: HostAndPort): string {
  const host = address.host.includes(":") ? `[${address.host}]` : address.host;
  return `http://${host}:${address.port}`;
}

/** The innermost message of a fetch failure (`fetch failed` hides the socket error in `cause`). */
function describeCause(error: unknown): string {
  let current = error as { message?: string; cause?: unknown } | undefined;
  while (current?.cause !== undefined) current = current.cause as typeof current;
  return current?.message ?? String(error);
}
