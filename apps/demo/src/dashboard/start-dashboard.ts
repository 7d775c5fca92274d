import path from "node:path";
import type { Configuration } from "@sluice/runtime";
import { RestOptions } from "@sluice/runtime-api";
import { APP_DIR } from "../demo-application.js";
import type { MetricFetcher } from "./metric-fetcher.js";
import { buildJobOverview, type JobStatus } from "./overview.js";
import { WebMonitorEndpoint } from "./web-monitor-endpoint.js";

/** Where the demo's build puts the dashboard page (`pnpm build` bundles it with esbuild). */
export const DASHBOARD_STATIC_DIR = path.join(APP_DIR, "dist/dashboard/static");

/** What the job manager role gives its dashboard. */
export interface DashboardOptions {
  /** `rest.port` and `rest.bind-address` are read from it. */
  readonly configuration: Configuration;
  /** The job's state now. */
  readonly status: () => JobStatus;
  /** Its task managers' metrics. */
  readonly fetcher: MetricFetcher;
  /** `POST /throttle`. */
  readonly onThrottle: (recordsPerSecond: number | null) => void;
  readonly onWarning: (message: string) => void;
}

/**
 * Starts the job manager's web dashboard on `rest.port` (default 8081; when that default is taken,
 * a free port) and `rest.bind-address`.
 *
 * @throws ConfigurationError when a `rest.port` set by the user cannot be listened on.
 */
export function startDashboard(options: DashboardOptions): Promise<WebMonitorEndpoint> {
  const { configuration, fetcher, status } = options;
  return WebMonitorEndpoint.start({
    host: configuration.get(RestOptions.BIND_ADDRESS),
    port: configuration.get(RestOptions.PORT),
    portIsExplicit: configuration.contains(RestOptions.PORT),
    staticDir: DASHBOARD_STATIC_DIR,
    overview: () => buildJobOverview(status(), fetcher),
    onThrottle: options.onThrottle,
    onWarning: options.onWarning,
  });
}
