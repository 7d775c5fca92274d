import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Metric, MetricGroup, MetricReporter } from "@sluice/runtime-api";
import { currentValueOf, MetricReporterError } from "@sluice/runtime-api";
import { Gauge, Registry } from "prom-client";

/** Everything outside `[a-zA-Z0-9:_]` becomes `_`, as Prometheus names require (and Flink does). */
const UNALLOWED_CHARACTERS = /[^a-zA-Z0-9:_]/g;

/** Flink's Prometheus names: `flink_` + the logical scope joined with `_` + the metric name. */
const SCOPE_PREFIX = "flink_";
const SCOPE_SEPARATOR = "_";

/** Replaces the characters Prometheus does not allow in names with `_` (Flink's filter). */
export function replaceInvalidChars(input: string): string {
  return input.replace(UNALLOWED_CHARACTERS, "_");
}

/** Options of a {@link PrometheusReporter}. */
export interface PrometheusReporterSettings {
  /** The reporter's name (`metrics.reporter.<name>`), for messages. */
  readonly name: string;
  /** The ports to try, in order; the first free one is taken (0: any free port). */
  readonly ports: readonly number[];
  /** The address to bind to. */
  readonly host: string;
  /** Whether label values keep only `[a-zA-Z0-9:_]` (Flink's `filterLabelValueCharacters`). */
  readonly filterLabelValueCharacters: boolean;
}

/** One exported series: a metric of one group. */
interface Child {
  readonly labels: Readonly<Record<string, string>>;
  readonly metric: Metric;
}

/** One Prometheus metric family: every group's metric of one name, told apart by labels. */
interface Family {
  readonly gauge: Gauge<string>;
  readonly labelNames: readonly string[];
  readonly children: Map<string, Child>;
}

function warn(message: string): void {
  process.emitWarning(message, { type: "SluiceMetricWarning", code: "SLUICE_METRIC_WARNING" });
}

/**
 * Exports every metric of its process over HTTP in Prometheus's text format (Flink's
 * `PrometheusReporter`), built with `prom-client`. A metric is named `flink_` + its group's
 * logical scope + its name, characters outside `[a-zA-Z0-9:_]` replaced by `_`
 * (`flink_taskmanager_job_task_numRecordsInPerSecond`); its group's variables become labels
 * without the angle brackets (`job_name`, `task_name`, `subtask_index`, `tm_id`, `host`, ...).
 * Counters, gauges and meters are all exported as Prometheus gauges, as Flink does (a meter as its
 * rate), since Flink's counters may go down. Values are read when Prometheus scrapes.
 *
 * `open()` binds the first free port of its range, so several processes on one host can share a
 * configuration; the endpoint answers `GET /metrics` (and `/`).
 */
export class PrometheusReporter implements MetricReporter {
  private readonly settings: PrometheusReporterSettings;
  private readonly registry = new Registry();
  private readonly families = new Map<string, Family>();
  private server: Server | undefined;
  private boundPort: number | undefined;
  private closing: Promise<void> | undefined;

  constructor(settings: PrometheusReporterSettings) {
    this.settings = settings;
  }

  /** The port the endpoint listens on, once open. */
  get port(): number | undefined {
    return this.boundPort;
  }

  /** The endpoint's URL (`http://<host>:<port>/metrics`), once open. */
  get url(): string | undefined {
    if (this.boundPort === undefined) return undefined;
    const host = this.settings.host.includes(":") ? `[${this.settings.host}]` : this.settings.host;
    return `http://${host}:${this.boundPort}/metrics`;
  }

  /**
   * Binds the HTTP endpoint to the first free port of the configured range.
   *
   * @throws MetricReporterError (`SLUICE_ERR_METRIC_REPORTER`) when every port is taken or the
   *   address cannot be bound, naming the reporter, the address and the ports tried.
   */
  async open(): Promise<void> {
    if (this.server !== undefined) return;
    const { host, ports, name } = this.settings;
    for (const port of ports) {
      const server = createServer((request, response) => this.serve(request, response));
      try {
        server.listen(port, host);
        await once(server, "listening"); // rejects on the server's "error" (EADDRINUSE, ...)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EADDRINUSE") continue;
        throw new MetricReporterError(
          `the Prometheus reporter "${name}" cannot listen on ${host}:${port}: ${(error as Error).message}`,
          { cause: error },
        );
      }
      this.server = server;
      const address = server.address();
      this.boundPort = typeof address === "object" && address !== null ? address.port : port;
      return;
    }
    throw new MetricReporterError(
      `the Prometheus reporter "${name}" found no free port on ${host}: every port of ${describePorts(ports)} is in use (metrics.reporter.${name}.port); give it a wider range`,
    );
  }

  /** Adds the metric as a series of its family, labelled with its group's variables. */
  notifyOfAddedMetric(metric: Metric, metricName: string, group: MetricGroup): void {
    const scope = group.getLogicalScope(replaceInvalidChars, SCOPE_SEPARATOR);
    const name = `${SCOPE_PREFIX}${scope}${SCOPE_SEPARATOR}${replaceInvalidChars(metricName)}`;
    const labels = this.labelsOf(group, name);
    if (labels === undefined) return;
    const labelNames = Object.keys(labels);
    let family = this.families.get(name);
    if (family === undefined) {
      family = this.createFamily(name, `${metricName} (scope: ${scope})`, labelNames);
    } else if (family.labelNames.join(",") !== labelNames.join(",")) {
      warn(
        `Prometheus reporter "${this.settings.name}": ${name} is reported with the labels ${family.labelNames.join(", ")}; a metric with the labels ${labelNames.join(", ")} cannot join it and is not reported`,
      );
      return;
    }
    family.children.set(childKey(labels, family.labelNames), { labels, metric });
  }

  /** Removes the metric's series; a family without series leaves the endpoint. */
  notifyOfRemovedMetric(metric: Metric, metricName: string, group: MetricGroup): void {
    const scope = group.getLogicalScope(replaceInvalidChars, SCOPE_SEPARATOR);
    const name = `${SCOPE_PREFIX}${scope}${SCOPE_SEPARATOR}${replaceInvalidChars(metricName)}`;
    const family = this.families.get(name);
    const labels = this.labelsOf(group, name);
    if (family === undefined || labels === undefined) return;
    const key = childKey(labels, family.labelNames);
    if (family.children.get(key)?.metric !== metric) return;
    family.children.delete(key);
    if (family.children.size === 0) {
      this.registry.removeSingleMetric(name);
      this.families.delete(name);
    }
  }

  /** Closes the endpoint (and its open connections) and forgets every metric. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.registry.clear();
    this.families.clear();
    if (server === undefined) return;
    await new Promise<void>((resolve, reject) => {
      server.close((error) => (error === undefined ? resolve() : reject(error)));
      // Keep-alive connections of a scraper would hold close() open until they time out.
      server.closeAllConnections();
    });
  }

  /** The group's variables as labels, or `undefined` when two variables map to one label. */
  private labelsOf(group: MetricGroup, name: string): Record<string, string> | undefined {
    const labels: Record<string, string> = {};
    for (const [key, value] of Object.entries(group.getAllVariables())) {
      const label = replaceInvalidChars(key.startsWith("<") ? key.slice(1, -1) : key);
      if (Object.hasOwn(labels, label)) {
        // Prometheus refuses a sample with a label twice, and would reject the whole scrape.
        warn(
          `Prometheus reporter "${this.settings.name}": two variables of ${name} map to the label ${label}; the metric is not reported`,
        );
        return undefined;
      }
      labels[label] = this.settings.filterLabelValueCharacters ? replaceInvalidChars(value) : value;
    }
    return labels;
  }

  private createFamily(name: string, help: string, labelNames: readonly string[]): Family {
    const children = new Map<string, Child>();
    const gauge: Gauge<string> = new Gauge({
      name,
      help,
      labelNames: [...labelNames],
      registers: [this.registry],
      // Values are read when Prometheus scrapes, as Flink's reporter reads its gauges then.
      collect: () => {
        gauge.reset();
        for (const child of children.values()) {
          let value: number;
          try {
            value = currentValueOf(child.metric);
          } catch (error) {
            warn(`reading ${name} failed: ${(error as Error)?.message ?? error}`);
            continue;
          }
          gauge.set(child.labels, value);
        }
      },
    });
    const family: Family = { gauge, labelNames, children };
    this.families.set(name, family);
    return family;
  }

  private serve(request: IncomingMessage, response: ServerResponse): void {
    const path = (request.url ?? "/").split("?")[0];
    if (path !== "/metrics" && path !== "/") {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found: try /metrics\n");
      return;
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    this.registry.metrics().then(
      (text) => {
        response.writeHead(200, { "content-type": this.registry.contentType });
        response.end(request.method === "HEAD" ? undefined : text);
      },
      (error: unknown) => {
        warn(
          `Prometheus reporter "${this.settings.name}" failed to render its metrics: ${(error as Error)?.message ?? error}`,
        );
        response.writeHead(500, { "content-type": "text/plain" }).end("metrics unavailable\n");
      },
    );
  }
}

function childKey(labels: Readonly<Record<string, string>>, labelNames: readonly string[]): string {
  return labelNames.map((label) => labels[label]).join("\u0000");
}

function describePorts(ports: readonly number[]): string {
  if (ports.length === 0) return "(none)";
  const first = ports[0] as number;
  const last = ports[ports.length - 1] as number;
  return ports.length === last - first + 1
    ? first === last
      ? `${first}`
      : `${first}-${last}`
    : ports.join(",");
}
