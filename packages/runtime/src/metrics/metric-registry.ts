import { currentValueOf, type Metric, type MetricGroup, MetricOptions } from "@sluice/runtime-api";
import { type Clock, SystemClock } from "../clock/clock.js";
import type { LoaderConfiguration, PluginLoaderOptions } from "../loader/plugin-loader.js";
import type { MetricDump } from "./metric-dump.js";
import { emitMetricWarning } from "./metric-warning.js";
import { type ReporterSetup, setUpReporters } from "./reporter-setup.js";
import { ScopeFormats } from "./scope-formats.js";
import { isView } from "./view.js";
import { ViewUpdater } from "./view-updater.js";

/** Where one metric reporter of a process serves (what `MetricRegistry.endpoints` lists). */
export interface MetricEndpoint {
  /** The reporter's name (`<name>` of `metrics.reporter.<name>.*`). */
  readonly reporter: string;
  /** Its URL, e.g. `http://127.0.0.1:9250/metrics`. */
  readonly url: string;
}

/** Options of a {@link MetricRegistry}. */
export interface MetricRegistryOptions {
  /** Opened reporters (see {@link MetricRegistry.fromConfiguration}); default none. */
  readonly reporters?: readonly ReporterSetup[];
  /** The scope formats (default: Flink's). */
  readonly scopeFormats?: ScopeFormats;
  /** The delimiter of metric identifiers (default `.`). */
  readonly delimiter?: string;
  /** The clock of time-based metrics (default: the process's monotonic clock). */
  readonly clock?: Clock;
  /**
   * True (default): views (meters, per-second times) are updated every 5 s on a timer. False:
   * only when `viewUpdater.update()` is called — for tests that drive a manual clock.
   */
  readonly updateViewsAutomatically?: boolean;
}

/**
 * The metric system of one process (Flink's `MetricRegistryImpl`): every group registers its
 * metrics here, and the registry tells each reporter, keeps the views (meters, timer gauges)
 * updated every 5 s, calls push-based reporters every interval, and answers {@link dump} for
 * in-process readers. One per task manager and one per job manager; {@link close} closes the
 * reporters.
 */
export class MetricRegistry {
  /** How every group builds its scope. */
  readonly scopeFormats: ScopeFormats;
  /** The delimiter of metric identifiers (`metrics.scope.delimiter`). */
  readonly delimiter: string;
  /** The clock of time-based metrics. */
  readonly clock: Clock;
  /** Updates meters and timer gauges every 5 s. */
  readonly viewUpdater: ViewUpdater;
  private readonly reporterSetups: readonly ReporterSetup[];
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly metricsByGroup = new Map<MetricGroup, Map<string, Metric>>();
  private closing: Promise<void> | undefined;

  constructor(options: MetricRegistryOptions = {}) {
    this.scopeFormats = options.scopeFormats ?? ScopeFormats.defaults();
    this.delimiter = options.delimiter ?? MetricOptions.SCOPE_DELIMITER.defaultValue;
    this.clock = options.clock ?? SystemClock;
    this.viewUpdater = new ViewUpdater(options.updateViewsAutomatically ?? true);
    this.reporterSetups = Object.freeze([...(options.reporters ?? [])]);
    for (const setup of this.reporterSetups) {
      const reporter = setup.reporter;
      if (typeof reporter.report !== "function" || setup.intervalMs <= 0) continue;
      const timer = setInterval(() => {
        try {
          reporter.report?.();
        } catch (error) {
          emitMetricWarning(
            `the metric reporter "${setup.name}" failed to report: ${(error as Error)?.message ?? error}`,
          );
        }
      }, setup.intervalMs);
      timer.unref();
      this.timers.push(timer);
    }
  }

  /**
   * A registry with the reporters and scope formats a configuration sets: every reporter under
   * `metrics.reporter.<name>.*` is loaded by class name, created and opened.
   *
   * @throws the errors of reporter set-up (`SLUICE_ERR_CONFIG`, `SLUICE_ERR_PLUGIN_*`,
   *   `SLUICE_ERR_METRIC_REPORTER`); nothing stays open when it fails.
   */
  static async fromConfiguration(
    configuration: LoaderConfiguration,
    options: Omit<MetricRegistryOptions, "reporters" | "scopeFormats" | "delimiter"> & {
      readonly loader?: PluginLoaderOptions;
    } = {},
  ): Promise<MetricRegistry> {
    const scopeFormats = ScopeFormats.fromConfiguration(configuration);
    const delimiter = configuration.get(MetricOptions.SCOPE_DELIMITER);
    const reporters = await setUpReporters(configuration, options.loader);
    return new MetricRegistry({ ...options, reporters, scopeFormats, delimiter });
  }

  /** The opened reporters, by name, in configuration order. */
  get reporters(): readonly ReporterSetup[] {
    return this.reporterSetups;
  }

  /**
   * Where this process's pull-based reporters serve (each reporter with a
   * `url`, see `MetricReporter.url`), by reporter name, in the order they were started.
   */
  endpoints(): MetricEndpoint[] {
    const endpoints: MetricEndpoint[] = [];
    for (const { name, reporter } of this.reporterSetups) {
      if (typeof reporter.url === "string") endpoints.push({ reporter: name, url: reporter.url });
    }
    return endpoints;
  }

  /** The reporter named `name`, if one was started. */
  getReporter(name: string): ReporterSetup["reporter"] | undefined {
    return this.reporterSetups.find((setup) => setup.name === name)?.reporter;
  }

  /** True once {@link close} was called. */
  isShutdown(): boolean {
    return this.closing !== undefined;
  }

  /**
   * Registers a metric of `group` (called by the group): reporters are told, views are updated
   * from now on. No-op once the registry is shut down.
   */
  register(metric: Metric, name: string, group: MetricGroup): void {
    if (this.closing !== undefined) return;
    let metrics = this.metricsByGroup.get(group);
    if (metrics === undefined) {
      metrics = new Map();
      this.metricsByGroup.set(group, metrics);
    }
    metrics.set(name, metric);
    if (isView(metric)) this.viewUpdater.notifyOfAddedView(metric);
    for (const setup of this.reporterSetups) {
      try {
        setup.reporter.notifyOfAddedMetric(metric, name, group);
      } catch (error) {
        emitMetricWarning(
          `the metric reporter "${setup.name}" failed to add ${group.getMetricIdentifier(name)}: ${(error as Error)?.message ?? error}`,
        );
      }
    }
  }

  /** Unregisters a metric of `group` (called when the group closes). */
  unregister(metric: Metric, name: string, group: MetricGroup): void {
    const metrics = this.metricsByGroup.get(group);
    if (metrics?.get(name) !== metric) return;
    metrics.delete(name);
    if (metrics.size === 0) this.metricsByGroup.delete(group);
    if (isView(metric)) this.viewUpdater.notifyOfRemovedView(metric);
    if (this.closing !== undefined) return;
    for (const setup of this.reporterSetups) {
      try {
        setup.reporter.notifyOfRemovedMetric(metric, name, group);
      } catch (error) {
        emitMetricWarning(
          `the metric reporter "${setup.name}" failed to remove ${group.getMetricIdentifier(name)}: ${(error as Error)?.message ?? error}`,
        );
      }
    }
  }

  /**
   * Every registered metric with its current value (Flink's metric dump): what a dashboard or a
   * progress line reads in-process, and what a process sends its coordinator to show.
   */
  dump(): MetricDump[] {
    const dumps: MetricDump[] = [];
    for (const [group, metrics] of this.metricsByGroup) {
      const scope = group.getScopeComponents();
      const logicalScope = group.getLogicalScope();
      const variables = group.getAllVariables();
      for (const [name, metric] of metrics) {
        const base = { scope, logicalScope, variables, name, type: metric.metricType };
        dumps.push(
          metric.metricType === "meter"
            ? { ...base, value: metric.getRate(), count: metric.getCount() }
            : { ...base, value: currentValueOf(metric) },
        );
      }
    }
    return dumps;
  }

  /**
   * Stops the view updater and the reporters' timers and closes every reporter. Idempotent; the
   * first error of a reporter's `close()` is thrown after all were closed.
   */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    this.viewUpdater.close();
    for (const timer of this.timers) clearInterval(timer);
    const results = await Promise.allSettled(
      this.reporterSetups.map(async (setup) => setup.reporter.close()),
    );
    const failed = results.find((result) => result.status === "rejected");
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  }
}
