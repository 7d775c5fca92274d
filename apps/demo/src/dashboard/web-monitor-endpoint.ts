import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, isIP } from "node:net";
import path from "node:path";
import { ConfigurationError } from "@sluice/core";
import type { JobOverview } from "./job-overview.js";

/** How often the dashboard's event stream sends the job's overview. */
export const UPDATE_INTERVAL_MS = 1000;
/** The largest request body accepted (`POST /throttle`). */
const MAX_BODY_BYTES = 4096;
/**
 * The smallest throttle accepted, as `--throttle` takes it: a tiny rate would stop the counters
 * for good (their next record would be due in centuries).
 */
export const MIN_THROTTLE_RECORDS_PER_SECOND = 1;

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".svg": "image/svg+xml",
};

/** How long {@link WebMonitorEndpoint.close} waits for the last event to reach the pages. */
const FINAL_EVENT_FLUSH_MS = 1000;

/** Options of {@link WebMonitorEndpoint.start}. */
export interface WebMonitorOptions {
  /** The local address to listen on (`rest.bind-address`). */
  readonly host: string;
  /** The port (`rest.port`); 0 takes any free port. */
  readonly port: number;
  /**
   * True when the port was set by the user: a taken port fails the start. False (the default
   * port): a taken port is reported to `onWarning` and a free one is taken instead.
   */
  readonly portIsExplicit: boolean;
  /** The built page (index.html and its bundle). */
  readonly staticDir: string;
  /** The job's overview now. */
  readonly overview: () => JobOverview;
  /**
   * `POST /throttle`: sets (records per second per count subtask) or lifts (`null`) the counters'
   * throttle.
   */
  readonly onThrottle: (recordsPerSecond: number | null) => void;
  readonly onWarning: (message: string) => void;
}

/**
 * The job manager's web endpoint (Flink's `WebMonitorEndpoint`, reduced to the demo's needs): the
 * dashboard page (static files built with the demo, no internet needed), the job's overview as
 * JSON (`GET /api/overview`), the same once a second as Server-Sent Events (`GET /api/events`),
 * and `POST /throttle` (`{"recordsPerSecond": 2000}`, or `null` to lift it).
 */
export class WebMonitorEndpoint {
  /** `http://host:port/`. */
  readonly url: string;
  private readonly streams = new Set<ServerResponse>();
  private timer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly server: Server,
    private readonly options: WebMonitorOptions,
  ) {
    const { address, port } = server.address() as AddressInfo;
    this.url = `http://${address.includes(":") ? `[${address}]` : address}:${port}/`;
  }

  /**
   * Listens on `options.port` (or, when the default port is taken, any free port).
   *
   * @throws ConfigurationError when the address cannot be listened on.
   */
  static async start(options: WebMonitorOptions): Promise<WebMonitorEndpoint> {
    let endpoint: WebMonitorEndpoint | undefined;
    const server = createServer((request, response) => {
      endpoint?.handle(request, response).catch((error: unknown) => {
        respond(response, 500, { error: (error as Error)?.message ?? String(error) });
      });
    });
    try {
      server.listen(options.port, options.host);
      await once(server, "listening"); // rejects on the server's "error" (EADDRINUSE, ...)
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (options.portIsExplicit || code !== "EADDRINUSE") {
        throw new ConfigurationError(
          `the web dashboard cannot listen on ${options.host}:${options.port} (rest.port): ${(error as Error).message}`,
          { cause: error },
        );
      }
      options.onWarning(
        `the dashboard's default port ${options.port} is taken; using a free port (set rest.port to choose one)`,
      );
      server.listen(0, options.host);
      await once(server, "listening");
    }
    endpoint = new WebMonitorEndpoint(server, options);
    return endpoint;
  }

  /**
   * Sends every page the overview one last time (the job's final state, which the page keeps
   * showing), ends every event stream and stops listening. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.timer);
      const streams = [...this.streams];
      this.streams.clear();
      if (streams.length > 0) {
        this.send(streams);
        // Ended streams flush what was written; a page that does not read is not waited for.
        const flushed = Promise.all(
          streams.map((stream) => new Promise<void>((resolve) => stream.end(resolve))),
        );
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, FINAL_EVENT_FLUSH_MS);
        });
        await Promise.race([flushed, timeout]);
        clearTimeout(timer);
      }
      await new Promise<void>((resolve) => {
        this.server.close(() => resolve());
        this.server.closeAllConnections();
      });
    })();
    return this.closing;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://localhost");
    const route = `${request.method} ${url.pathname}`;
    switch (route) {
      case "GET /api/overview":
        respond(response, 200, this.options.overview());
        return;
      case "GET /api/events":
        this.stream(response);
        return;
      case "POST /throttle": {
        const refusal = this.crossSiteRefusal(request);
        if (refusal !== undefined) {
          this.options.onWarning(`refused POST /throttle: ${refusal.error}`);
          respond(response, refusal.status, { error: refusal.error });
          return;
        }
        await this.throttle(request, response);
        return;
      }
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      respond(response, 405, { error: `${route} is not supported` });
      return;
    }
    this.serveFile(url.pathname, response);
  }

  private stream(response: ServerResponse): void {
    response.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-store",
      connection: "keep-alive",
    });
    response.write(`retry: ${UPDATE_INTERVAL_MS}\n\n`);
    this.streams.add(response);
    response.on("close", () => this.streams.delete(response));
    this.send([response]);
    this.timer ??= setInterval(() => this.send(this.streams), UPDATE_INTERVAL_MS);
  }

  private send(streams: Iterable<ServerResponse>): void {
    const event = `data: ${JSON.stringify(this.options.overview())}\n\n`;
    for (const stream of streams) stream.write(event);
  }

  /**
   * Why a state-changing request is refused, if it is: the operator's browser reaches this
   * loopback port too, so a page of another site must not be able to change the job. The `Host`
   * must name this port by an IP address or `localhost` (a DNS name could be rebound to
   * loopback), an `Origin`, when sent, must be that same host, and the body must be declared JSON
   * (a cross-site form or `no-cors` fetch can only send `text/plain` and form types without a
   * preflight).
   */
  private crossSiteRefusal(
    request: IncomingMessage,
  ): { readonly status: number; readonly error: string } | undefined {
    const port = new URL(this.url).port;
    const host = request.headers.host ?? "";
    let hostname: string | undefined;
    try {
      const parsed = new URL(`http://${host}`);
      if (parsed.port === port) hostname = parsed.hostname;
    } catch {
      hostname = undefined;
    }
    if (
      hostname === undefined ||
      !(hostname === "localhost" || isIP(hostname.replace(/^\[|\]$/g, "")) !== 0)
    ) {
      return {
        status: 403,
        error: `the Host header ${JSON.stringify(host)} is not this dashboard's address (an IP address or localhost with port ${port})`,
      };
    }
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== `http://${host}`) {
      return {
        status: 403,
        error: `the request comes from ${JSON.stringify(origin)}, not from the dashboard at http://${host}`,
      };
    }
    const type = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    if (type !== "application/json") {
      return {
        status: 415,
        error: `the body must be application/json, got ${JSON.stringify(request.headers["content-type"] ?? "none")}`,
      };
    }
    return undefined;
  }

  private async throttle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let body = "";
    for await (const chunk of request) {
      body += String(chunk);
      if (body.length > MAX_BODY_BYTES) {
        respond(response, 413, { error: `the body exceeds ${MAX_BODY_BYTES} bytes` });
        return;
      }
    }
    let value: unknown;
    try {
      value = (JSON.parse(body) as { recordsPerSecond?: unknown }).recordsPerSecond;
    } catch {
      value = undefined;
    }
    if (
      value !== null &&
      !(
        typeof value === "number" &&
        Number.isFinite(value) &&
        value >= MIN_THROTTLE_RECORDS_PER_SECOND
      )
    ) {
      respond(response, 400, {
        error: `POST /throttle expects {"recordsPerSecond": <a number of at least ${MIN_THROTTLE_RECORDS_PER_SECOND}, or null to lift the throttle>}, got ${JSON.stringify(body.slice(0, 200))}`,
      });
      return;
    }
    this.options.onThrottle(value);
    respond(response, 200, { recordsPerSecond: value });
  }

  private serveFile(pathname: string, response: ServerResponse): void {
    const { staticDir } = this.options;
    const file = path.resolve(staticDir, `.${pathname === "/" ? "/index.html" : pathname}`);
    const type = CONTENT_TYPES[path.extname(file)];
    if (!file.startsWith(staticDir + path.sep) || type === undefined || !existsSync(file)) {
      if (pathname === "/" && !existsSync(staticDir)) {
        respond(response, 503, {
          error: `the dashboard page is not built (${staticDir} is missing): run pnpm build`,
        });
        return;
      }
      respond(response, 404, { error: `${pathname} not found` });
      return;
    }
    response.writeHead(200, { "content-type": type, "cache-control": "no-cache" });
    response.end(readFileSync(file));
  }
}

function respond(response: ServerResponse, status: number, body: unknown): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  response.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
  response.end(JSON.stringify(body));
}
