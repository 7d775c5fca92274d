import type { ServerResponse } from "node:http";
import { RestHandlerError } from "./rest-handler-error.js";

/** The HTTP methods the REST endpoint routes. */
export type RestMethod = "GET" | "POST" | "PATCH";

/** What a route's handler gets. */
export interface RestRequest {
  /** The path's parameters by name (`/jobs/:jobid` → `jobid`), decoded. */
  readonly params: Readonly<Record<string, string>>;
  /** The query string's parameters. */
  readonly query: URLSearchParams;
  /** The body, parsed as JSON (`undefined` without a body). */
  readonly body: unknown;
}

/** What a route's handler answers: a status (200 by default) and a JSON body. */
export interface RestResponse {
  readonly status?: number;
  readonly body: unknown;
}

/** One route: a method, a path pattern and its handler (Flink's `RestHandlerSpecification`). */
export interface RestRoute {
  readonly method: RestMethod;
  /** `/jobs/:jobid/vertices/:vertexid`: literal segments and `:name` parameters. */
  readonly path: string;
  /** Changes state: the endpoint checks the request comes from no other site (Host, Origin). */
  readonly stateChanging?: boolean;
  /** Reads a JSON body. */
  readonly hasBody?: boolean;
  /**
   * Answers the request. A {@link RestHandlerError} sets the status; any other error is a 500.
   * A handler that streams (event streams) writes to `response` itself and returns `undefined`.
   */
  readonly handle: (
    request: RestRequest,
    response: ServerResponse,
  ) => RestResponse | undefined | Promise<RestResponse | undefined>;
}

/** A route with its path split into segments. */
interface CompiledRoute extends RestRoute {
  readonly segments: readonly string[];
}

/** What {@link RestRouter.match} found. */
export interface RouteMatch {
  readonly route: RestRoute;
  readonly params: Readonly<Record<string, string>>;
}

/**
 * Picks a request's route by method and path (Flink's router of the `WebMonitorEndpoint`).
 * Adding a route is one entry: its method, its pattern and a small handler.
 */
export class RestRouter {
  private readonly routes: CompiledRoute[];

  constructor(routes: readonly RestRoute[]) {
    this.routes = routes.map((route) => ({ ...route, segments: split(route.path) }));
  }

  /**
   * The route of `method` and `pathname`, or `undefined` when no route has that path.
   *
   * @throws RestHandlerError 405 when the path exists for other methods only; 404 for a
   *   parameter that is not valid percent-encoding.
   */
  match(method: string, pathname: string): RouteMatch | undefined {
    const segments = split(pathname);
    const allowed: string[] = [];
    for (const route of this.routes) {
      const params = matchSegments(route.segments, segments);
      if (params === undefined) continue;
      if (route.method === method) return { route, params };
      allowed.push(route.method);
    }
    if (allowed.length > 0) {
      throw new RestHandlerError(
        405,
        `${method} ${pathname} is not supported (${[...new Set(allowed)].join(", ")} is)`,
        {},
      );
    }
    return undefined;
  }
}

function split(path: string): string[] {
  return path.split("/").filter((segment) => segment !== "");
}

function matchSegments(
  pattern: readonly string[],
  segments: readonly string[],
): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i] as string;
    const got = segments[i] as string;
    if (want.startsWith(":")) {
      try {
        params[want.slice(1)] = decodeURIComponent(got);
      } catch {
        throw new RestHandlerError(404, `the path segment ${JSON.stringify(got)} is not valid`);
      }
    } else if (want !== got) {
      return undefined;
    }
  }
  return params;
}
