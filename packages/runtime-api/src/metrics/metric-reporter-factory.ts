import type { ConfigOption, ReadableConfig } from "../config/config-option.js";
import type { MetricReporter } from "./metric-reporter.js";

/**
 * Brands a {@link MetricReporterFactory}, so the loader recognises it without `instanceof` (which
 * fails across duplicate installs). It is `Symbol.for`, so every copy of this package shares it.
 */
export const METRIC_REPORTER_FACTORY_BRAND: unique symbol = Symbol.for(
  "@sluice/metric-reporter-factory",
);

/** The members a metric reporter factory must have, in the order error messages list them. */
export const METRIC_REPORTER_FACTORY_MEMBERS = ["createMetricReporter"] as const;

/** What the runtime gives {@link MetricReporterFactory.createMetricReporter}. */
export interface MetricReporterContext {
  /** The reporter's name: the `<name>` of `metrics.reporter.<name>.*`. */
  readonly name: string;
  /**
   * The process's whole configuration. A reporter reads its typed options from it, with keys
   * under `metrics.reporter.<name>.` (the options it declares in
   * {@link MetricReporterFactory.configOptions}, for this `name`).
   */
  readonly configuration: ReadableConfig;
  /**
   * Every raw value set under `metrics.reporter.<name>.`, keyed by the rest of the key (Flink's
   * `MetricConfig`): `metrics.reporter.my.url: http://x` gives `{ url: "http://x" }`. For
   * reporters that define no `ConfigOption`s; values are as written (YAML scalars or `-D`
   * strings).
   */
  readonly properties: Readonly<Record<string, unknown>>;
}

/**
 * The entry point of a metric reporter plugin (Flink's `MetricReporterFactory`): what
 * `metrics.reporter.<name>.factory.class` names. The runtime loads it the way it loads a shuffle
 * plugin (`<module>#<export>`; a class with a no-argument constructor or an object) and calls
 * `createMetricReporter` once per process that reports (each task manager, the job manager).
 *
 * ```ts
 * export class MyReporterFactory implements MetricReporterFactory {
 *   readonly [METRIC_REPORTER_FACTORY_BRAND] = true;
 *   createMetricReporter(context) { return new MyReporter(context.properties); }
 * }
 * ```
 */
export interface MetricReporterFactory {
  /** Marks the object as a metric reporter factory (see {@link METRIC_REPORTER_FACTORY_BRAND}). */
  readonly [METRIC_REPORTER_FACTORY_BRAND]?: true;

  /**
   * The reporter's own configuration options, with the placeholder `<name>` where the reporter's
   * name goes (`metrics.reporter.<name>.port`); the reporter reads them for its own name from
   * {@link MetricReporterContext.configuration}. Optional; the generated configuration docs list
   * them under the plugin's package. Their keys are known already (every
   * `metrics.reporter.<name>.<parameter>` is), and the reporter checks their values itself when it
   * reads them in `createMetricReporter`.
   */
  readonly configOptions?: readonly ConfigOption<unknown>[];

  /**
   * Creates the reporter. Must not do I/O (do that in `MetricReporter.open`).
   *
   * @throws ConfigurationError when the reporter's configuration is invalid.
   */
  createMetricReporter(context: MetricReporterContext): MetricReporter;
}

/** The required members `value` lacks; empty when it has them all. For error messages. */
export function missingMetricReporterFactoryMembers(value: unknown): string[] {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) {
    return [...METRIC_REPORTER_FACTORY_MEMBERS];
  }
  const record = value as Record<string, unknown>;
  return METRIC_REPORTER_FACTORY_MEMBERS.filter((name) => typeof record[name] !== "function");
}

/**
 * True when `value` is a metric reporter factory: it carries the brand, or it has a
 * `createMetricReporter` method. Works across copies of this package (no `instanceof`).
 */
export function isMetricReporterFactory(value: unknown): value is MetricReporterFactory {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  if (
    (value as { [METRIC_REPORTER_FACTORY_BRAND]?: unknown })[METRIC_REPORTER_FACTORY_BRAND] === true
  ) {
    return true;
  }
  return missingMetricReporterFactoryMembers(value).length === 0;
}
