import { existsSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Configuration, JobExecution, JobResult } from "@sluice/runtime";
import { HeartbeatManagerOptions, RestOptions } from "@sluice/runtime-api";
import { emitClusterWarning } from "../cluster-warning.js";
import type { InitializingJob } from "../dispatcher.js";
import type { HostAndPort, JobManager } from "../job-manager.js";
import { CompletedOperationCache } from "./completed-operation-cache.js";
import { crossSiteRefusal } from "./cross-site-refusal.js";
import { EventStreams } from "./event-streams.js";
import { ExecutionGraphInfo } from "./execution-graph-info.js";
import { ExecutionGraphInfoStore } from "./execution-graph-info-store.js";
import { listenOnRestPort } from "./listen-on-rest-port.js";
import { MetricFetcher } from "./metric-fetcher.js";
import { enforceRequestDeadline } from "./request-deadline.js";
import { RestHandlerError } from "./rest-handler-error.js";
import { type RestRoute, RestRouter } from "./rest-router.js";
import { jobEventOf, notFound, restRoutes } from "./rest-routes.js";
import { savepointRoutes } from "./savepoint-handlers.js";

/**
 * Where the package's build puts the dashboard page (`build-web-dashboard.mjs` bundles it with
 * esbuild): the same folder whether this module runs from `src/` (tests) or `dist/`.
 */
export const WEB_DASHBOARD_DIR = fileURLToPath(
  new URL("../../dist/web-dashboard/", import.meta.url),
);

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".svg": "image/svg+xml",
};

/** How long an idle keep-alive connection stays open between two requests (Node's default). */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/** Options of {@link WebMonitorEndpoint.start}. */
export interface WebMonitorEndpointOptions {
  /**
   * Where to listen. Default: `rest.bind-address` and `rest.port` of the job manager's
   * configuration; when that port is the default one (not set) and taken, a free one is taken.
   */
  readonly bind?: HostAndPort;
  /**
   * The task managers' metrics, when the application fetches them already (e.g. for a progress
   * line); default: a fetcher of the endpoint's own that queries on demand, at most every
   * `metrics.fetcher.update-interval`.
   */
  readonly metricFetcher?: MetricFetcher;
  /** A refused request, a port taken, a dropped stream (default: `process.emitWarning`). */
  readonly onWarning?: (message: string) => void;
}

/**
 * The job manager's REST endpoint and web dashboard (Flink's `WebMonitorEndpoint`), for every job
 * the job manager deploys: the REST API in Flink's shapes (`/overview`, `/jobs`,
 * `/jobs/:jobid`, …, see docs/rest-api.md), each job's live view as Server-Sent Events, job
 * messages to the job's user code, cancellation, and the dashboard page (static files built with
 * this package, no internet needed). It keeps running jobs' state as the job manager has it and
 * ended jobs' final bodies (`jobstore.*`). Its limits (`rest.server.*`, `rest.event-streams.*`)
 * keep a slow or hostile client from growing the job manager's memory; state-changing routes
 * refuse cross-site requests.
 *
 * `JobManager.start` does not start it: an embedding application or a test decides whether a
 * port opens. The `sluice jobmanager` process always starts it.
 */
export class WebMonitorEndpoint {
  /** `http://host:port/`. */
  readonly url: string;
  /** The port it listens on. */
  readonly port: number;
  private readonly router: RestRouter;
  private readonly streams: EventStreams;
  private readonly jobs: ExecutionGraphInfoStore;
  private readonly fetcher: MetricFetcher;
  private readonly stopWatching: readonly (() => void)[];
  private readonly maxContentLength: number;
  private closing: Promise<void> | undefined;
  private lastDropWarningAt = Number.NEGATIVE_INFINITY;

  private constructor(
    private readonly server: Server,
    jobManager: JobManager,
    options: WebMonitorEndpointOptions,
    private readonly warn: (message: string) => void,
  ) {
    const { address, port } = server.address() as AddressInfo;
    this.port = port;
    this.url = `http://${address.includes(":") ? `[${address}]` : address}:${port}/`;
    const { configuration } = jobManager;
    this.maxContentLength = configuration.get(RestOptions.SERVER_MAX_CONTENT_LENGTH);
    this.fetcher =
      options.metricFetcher ??
      new MetricFetcher(
        () => jobManager.taskManagers,
        undefined,
        configuration.get(RestOptions.METRIC_FETCHER_UPDATE_INTERVAL),
      );
    this.jobs = new ExecutionGraphInfoStore(
      configuration.get(RestOptions.JOB_STORE_MAX_CAPACITY),
      configuration.get(RestOptions.JOB_STORE_EXPIRATION_TIME),
    );
    const refreshIntervalMs = configuration.get(RestOptions.WEB_REFRESH_INTERVAL);
    this.streams = new EventStreams({
      max: configuration.get(RestOptions.EVENT_STREAMS_MAX),
      intervalMs: refreshIntervalMs,
      slowClientTimeoutMs: configuration.get(RestOptions.EVENT_STREAMS_SLOW_CLIENT_TIMEOUT),
      maxBytes: configuration.get(RestOptions.EVENT_STREAMS_MAX_BYTES),
      eventOf: async (jid) => {
        const job = this.jobs.get(jid);
        return job === undefined ? undefined : jobEventOf(job, this.fetcher);
      },
      onWarning: warn,
    });
    this.router = new RestRouter([
      ...restRoutes({
        jobManager,
        jobs: this.jobs,
        fetcher: this.fetcher,
        streams: this.streams,
        refreshIntervalMs,
        messageTimeoutMs: configuration.get(HeartbeatManagerOptions.HEARTBEAT_TIMEOUT),
      }),
      ...savepointRoutes({
        jobOf: (jid) => this.jobs.get(jid ?? "") ?? notFound(jobManager, jid),
        operations: new CompletedOperationCache(
          configuration.get(RestOptions.ASYNC_STORE_DURATION),
        ),
      }),
    ]);
    const historySize = configuration.get(RestOptions.WEB_EXCEPTION_HISTORY_SIZE);
    const track = (execution: JobExecution) => this.track(execution, historySize);
    const trackInitializing = (job: InitializingJob) => this.trackInitializing(job, historySize);
    for (const job of jobManager.initializingJobs) trackInitializing(job);
    for (const execution of jobManager.jobs) track(execution);
    this.stopWatching = [
      jobManager.onJobInitializing(trackInitializing),
      jobManager.onJobDeployed(track),
    ];
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      this.handle(request, response).catch((error: unknown) => respondError(response, error));
    });
    server.on("drop", () => {
      const now = performance.now();
      if (now - this.lastDropWarningAt < 1000) return;
      this.lastDropWarningAt = now;
      warn(
        `the REST endpoint at ${this.url} refused a connection: ${server.maxConnections} are open (rest.server.max-connections)`,
      );
    });
  }

  /**
   * Listens for REST requests of `jobManager`'s jobs: those running now and every job it deploys
   * from now on.
   *
   * @throws ConfigurationError when a `rest.*` key holds a bad value, or the address cannot be
   *   listened on (naming it and `rest.port`).
   */
  static async start(
    jobManager: JobManager,
    options: WebMonitorEndpointOptions = {},
  ): Promise<WebMonitorEndpoint> {
    const { configuration } = jobManager;
    const warn = options.onWarning ?? emitClusterWarning;
    const host = options.bind?.host ?? configuration.get(RestOptions.BIND_ADDRESS);
    const port = options.bind?.port ?? configuration.get(RestOptions.PORT);
    const portIsExplicit = options.bind !== undefined || configuration.contains(RestOptions.PORT);
    const requestTimeout = configuration.get(RestOptions.SERVER_REQUEST_TIMEOUT);
    const server = createServer({
      // Node's own request timeouts judge from its timers phase, which runs before the bytes a
      // client sent during a stall of this event loop are read: they are off, and
      // enforceRequestDeadline applies rest.server.request-timeout instead, from connect on.
      requestTimeout: 0,
      headersTimeout: 0,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    });
    server.maxConnections = configuration.get(RestOptions.SERVER_MAX_CONNECTIONS);
    enforceRequestDeadline(server, requestTimeout);
    await listenOnRestPort(server, { host, port, portIsExplicit }, warn);
    const endpoint = new WebMonitorEndpoint(server, jobManager, options, warn);
    await jobManager.publishRestAddress(endpoint.advertisedUrl(configuration));
    return endpoint;
  }

  /**
   * Where clients reach this endpoint: its URL, or, when it listens on every interface, the same
   * port at `rest.address` (else `jobmanager.rpc.address`, else this host's name).
   */
  private advertisedUrl(configuration: Configuration): string {
    const { address } = this.server.address() as AddressInfo;
    if (address !== "0.0.0.0" && address !== "::") return this.url;
    const host = configuration.getOptional(RestOptions.ADDRESS) ?? hostname();
    return `http://${host.includes(":") ? `[${host}]` : host}:${this.port}/`;
  }

  /** Event streams open now. */
  get eventStreams(): number {
    return this.streams.size;
  }

  /**
   * Sends every open page its job's state one last time (the page keeps a job's final state),
   * ends the event streams, stops listening and drops every connection. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const stop of this.stopWatching) stop();
      await this.streams.close();
      await new Promise<void>((resolve) => {
        this.server.close(() => resolve());
        this.server.closeAllConnections();
      });
    })();
    return this.closing;
  }

  /**
   * Shows `execution` from now on (the job it took over, INITIALIZING until now, when there is
   * one); once it ended, only its final bodies.
   */
  private track(execution: JobExecution, historySize: number): void {
    const known = this.jobs.get(execution.jobId.toString());
    let job: ExecutionGraphInfo;
    if (known?.initializingJob !== undefined) {
      job = known;
      job.attach(execution);
    } else {
      job = new ExecutionGraphInfo(execution, historySize);
      this.jobs.add(job);
    }
    void execution.terminated.then((result) => this.archive(job, result));
  }

  /**
   * Shows a job the job manager takes over as INITIALIZING (its name and when the takeover
   * began), until it is deployed ({@link track}) or ends before that: canceled, suspended, or
   * failed with the cause.
   */
  private trackInitializing(initializing: InitializingJob, historySize: number): void {
    const job = new ExecutionGraphInfo(initializing, historySize);
    this.jobs.add(job);
    void initializing.result.then((result) => {
      // A job deployed meanwhile is archived when its execution ends.
      if (job.initializingJob !== undefined) void this.archive(job, result);
    });
  }

  /** `job` ended with `result`: it keeps its final bodies, and its event streams get them. */
  private async archive(job: ExecutionGraphInfo, result: JobResult): Promise<void> {
    // The last metrics the job's tasks reported are what its final body shows.
    job.archive(result, this.fetcher);
    this.jobs.ended(job.jid);
    this.streams.finish(job.jid, await jobEventOf(job, this.fetcher));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://localhost");
    const method = request.method ?? "GET";
    const match = this.router.match(method === "HEAD" ? "GET" : method, url.pathname);
    if (match === undefined) {
      if (method !== "GET" && method !== "HEAD") {
        throw new RestHandlerError(404, `${method} ${url.pathname} is not a route`);
      }
      this.serveFile(url.pathname, response);
      return;
    }
    const { route, params } = match;
    if (route.stateChanging) {
      const refusal = crossSiteRefusal(request, this.port);
      if (refusal !== undefined) {
        this.warn(`refused ${method} ${url.pathname}: ${refusal.message}`);
        throw refusal;
      }
    }
    const body = route.hasBody ? await this.readJson(request, route) : undefined;
    const result = await route.handle({ params, query: url.searchParams, body }, response);
    if (result !== undefined) respond(response, result.status ?? 200, result.body);
  }

  /**
   * The request's body as JSON, read up to `rest.server.max-content-length`.
   *
   * @throws RestHandlerError 413 beyond the limit (checked on `content-length` before reading,
   *   and as it arrives), 400 when it is not JSON.
   */
  private async readJson(request: IncomingMessage, route: RestRoute): Promise<unknown> {
    const limit = this.maxContentLength;
    const tooLarge = () => {
      // The rest of the body is not read: the connection ends with the response.
      request.once("end", () => undefined);
      return new RestHandlerError(
        413,
        `the body of ${route.method} ${route.path} exceeds ${limit} bytes (${RestOptions.SERVER_MAX_CONTENT_LENGTH.key})`,
        { close: true },
      );
    };
    if (Number(request.headers["content-length"] ?? 0) > limit) throw tooLarge();
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of request) {
      length += (chunk as Buffer).length;
      if (length > limit) throw tooLarge();
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString("utf8");
    if (text.trim() === "") return undefined;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new RestHandlerError(
        400,
        `the body of ${route.method} ${route.path} is not JSON: ${(error as Error).message}`,
      );
    }
  }

  private serveFile(pathname: string, response: ServerResponse): void {
    const dir = WEB_DASHBOARD_DIR;
    const file = path.resolve(dir, `.${pathname === "/" ? "/index.html" : pathname}`);
    const type = CONTENT_TYPES[path.extname(file)];
    if (!file.startsWith(dir) || type === undefined || !existsSync(file)) {
      if (pathname === "/" && !existsSync(dir)) {
        throw new RestHandlerError(
          503,
          `the dashboard page is not built (${dir} is missing): build @sluice/cluster`,
        );
      }
      throw new RestHandlerError(404, `${pathname} not found`);
    }
    response.writeHead(200, { "content-type": type, "cache-control": "no-cache" });
    response.end(readFileSync(file));
  }
}

function respond(response: ServerResponse, status: number, body: unknown, close = false): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  response.writeHead(status, {
    "content-type": "application/json",
    "cache-control": "no-store",
    ...(close ? { connection: "close" } : {}),
  });
  response.end(JSON.stringify(body));
}

/** Flink's error body: `{"errors": [message]}` with the handler's status, or 500. */
function respondError(response: ServerResponse, error: unknown): void {
  if (error instanceof RestHandlerError) {
    const { close, ...extra } = error.body as { close?: boolean };
    respond(response, error.status, { errors: [error.message], ...extra }, close === true);
    return;
  }
  respond(response, 500, { errors: [(error as Error)?.message ?? String(error)] });
}
