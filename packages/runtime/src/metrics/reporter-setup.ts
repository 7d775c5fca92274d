import { isSluiceError } from "@sluice/core";
import {
  type ConfigOption,
  isMetricReporterFactory,
  METRIC_REPORTER_FACTORY_BRAND,
  MetricOptions,
  type MetricReporter,
  MetricReporterError,
  type MetricReporterFactory,
  MetricReporterOptions,
  metricReporterKeyPrefix,
  missingMetricReporterFactoryMembers,
} from "@sluice/runtime-api";
import { PluginContractError } from "../loader/errors.js";
import {
  DEFAULT_METRIC_REPORTER_FACTORIES,
  METRIC_REPORTER_ALIASES,
} from "../loader/factory-reference.js";
import {
  type LoadedPlugin,
  type LoaderConfiguration,
  loadPlugin,
  type PluginKind,
  type PluginLoaderOptions,
} from "../loader/plugin-loader.js";
import { emitMetricWarning } from "./metric-warning.js";

/** An opened reporter and what the registry needs to run it (Flink's `ReporterSetup`). */
export interface ReporterSetup {
  /** The reporter's name (`<name>` of `metrics.reporter.<name>.*`). */
  readonly name: string;
  /** The opened reporter. */
  readonly reporter: MetricReporter;
  /** How often its `report()` is called, in ms (push-based reporters only). */
  readonly intervalMs: number;
}

const REPORTER_KEY = /^metrics\.reporter\.([^.]+)\./;

/**
 * The names of the reporters to start: `metrics.reporters` when set, else every `<name>` that
 * appears in a `metrics.reporter.<name>.*` key (in the order first set). A configuration that
 * cannot list its keys only starts the reporters `metrics.reporters` names.
 */
export function configuredReporterNames(configuration: LoaderConfiguration): string[] {
  const listed = configuration.getOptional(MetricOptions.REPORTERS_LIST);
  if (listed !== undefined) {
    return [
      ...new Set(
        listed
          .split(",")
          .map((name) => name.trim())
          .filter((name) => name !== ""),
      ),
    ];
  }
  const names = new Set<string>();
  for (const key of configuration.keys?.() ?? []) {
    const name = REPORTER_KEY.exec(key)?.[1];
    if (name !== undefined) names.add(name);
  }
  return [...names];
}

/** The raw values under `metrics.reporter.<name>.`, keyed by the rest of the key. */
function reporterProperties(
  configuration: LoaderConfiguration,
  name: string,
): Record<string, unknown> {
  const prefix = metricReporterKeyPrefix(name);
  const properties: Record<string, unknown> = {};
  for (const key of configuration.keys?.() ?? []) {
    if (key.startsWith(prefix)) properties[key.slice(prefix.length)] = configuration.getRaw?.(key);
  }
  return Object.freeze(properties);
}

function reporterKind(name: string, option: ConfigOption<string | undefined>) {
  const fallback = DEFAULT_METRIC_REPORTER_FACTORIES[name];
  const kind: PluginKind<MetricReporterFactory> = {
    name: "MetricReporterFactory",
    option,
    ...(fallback === undefined ? {} : { defaultValue: fallback }),
    description: `a MetricReporterFactory for the reporter "${name}" as <module>#<export> (or the alias prometheus), since keys under ${metricReporterKeyPrefix(name)} are set`,
    aliases: METRIC_REPORTER_ALIASES,
    brandKey: METRIC_REPORTER_FACTORY_BRAND.description ?? "@sluice/metric-reporter-factory",
    isFactory: isMetricReporterFactory,
    missingMembers: missingMetricReporterFactoryMembers,
  };
  return kind;
}

/**
 * Loads the factory of the reporter named `name`, as `metrics.reporter.<name>.factory.class` (or
 * the default for `prom`) names it.
 */
export function loadMetricReporterFactory(
  configuration: LoaderConfiguration,
  name: string,
  loader: PluginLoaderOptions = {},
): Promise<LoadedPlugin<MetricReporterFactory>> {
  return loadPlugin(
    configuration,
    reporterKind(name, MetricReporterOptions.factoryClass(name)),
    loader,
  );
}

const REPORTER_MEMBERS = ["notifyOfAddedMetric", "notifyOfRemovedMetric", "close"] as const;

function checkReporter(value: unknown, name: string, file: string): MetricReporter {
  const where = `createMetricReporter() of the reporter "${name}" (${file})`;
  if (value instanceof Promise || typeof (value as { then?: unknown })?.then === "function") {
    throw new PluginContractError(
      `${where} returned a Promise; it must return the reporter synchronously and acquire resources in open()`,
    );
  }
  if (typeof value !== "object" || value === null) {
    throw new PluginContractError(`${where} returned ${String(value)}, not a MetricReporter`);
  }
  const record = value as Record<string, unknown>;
  const missing = REPORTER_MEMBERS.filter((member) => typeof record[member] !== "function");
  if (missing.length > 0) {
    throw new PluginContractError(
      `${where} returned an object without ${missing.map((m) => `${m}()`).join(", ")}; a MetricReporter needs ${REPORTER_MEMBERS.map((m) => `${m}()`).join(", ")}`,
    );
  }
  return value as MetricReporter;
}

/**
 * Loads, creates and opens every configured metric reporter (Flink's `ReporterSetup`), each
 * through the same plugin loader as the shuffle: `metrics.reporter.<name>.factory.class` names the
 * factory (`prometheus` is the bundled `@sluice/metrics-prometheus`; the reporter `prom` defaults
 * to it). When one fails, those already opened are closed again.
 *
 * @throws ConfigurationError when a reporter has keys but no factory class, or a value is invalid.
 * @throws the loader's errors (`SLUICE_ERR_PLUGIN_*`); PluginContractError when
 *   `createMetricReporter` returns no reporter; MetricReporterError when `open()` fails.
 */
export async function setUpReporters(
  configuration: LoaderConfiguration,
  loader: PluginLoaderOptions = {},
): Promise<ReporterSetup[]> {
  const setups: ReporterSetup[] = [];
  try {
    for (const name of configuredReporterNames(configuration)) {
      const plugin = await loadMetricReporterFactory(configuration, name, loader);
      const created = plugin.factory.createMetricReporter({
        name,
        configuration,
        properties: reporterProperties(configuration, name),
      });
      const reporter = checkReporter(created, name, plugin.file);
      const intervalMs = configuration.get(MetricReporterOptions.interval(name));
      try {
        await reporter.open?.();
      } catch (error) {
        await closeQuietly(reporter);
        if (isSluiceError(error)) throw error;
        throw new MetricReporterError(
          `the metric reporter "${name}" (${plugin.value}) failed to open: ${(error as Error)?.message ?? error}`,
          { cause: error },
        );
      }
      setups.push({ name, reporter, intervalMs });
    }
  } catch (error) {
    await Promise.all(setups.map((setup) => closeQuietly(setup.reporter)));
    throw error;
  }
  return setups;
}

/**
 * Closes a reporter because the start failed. The start's error is the one thrown; an error of
 * the close itself is reported as a warning rather than hiding it.
 */
async function closeQuietly(reporter: MetricReporter): Promise<void> {
  try {
    await reporter.close();
  } catch (error) {
    emitMetricWarning(
      `closing a metric reporter after a failed start threw: ${(error as Error)?.message ?? error}`,
    );
  }
}
