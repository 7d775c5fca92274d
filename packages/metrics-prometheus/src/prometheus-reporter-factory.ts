import {
  type ConfigOption,
  METRIC_REPORTER_FACTORY_BRAND,
  type MetricReporterContext,
  type MetricReporterFactory,
  parsePortRange,
} from "@sluice/runtime-api";
import { PrometheusReporter } from "./prometheus-reporter.js";
import { PrometheusReporterOptions } from "./prometheus-reporter-options.js";

/**
 * Creates the {@link PrometheusReporter} (Flink's `PrometheusReporterFactory`): what
 * `metrics.reporter.<name>.factory.class: prometheus` (or
 * `@sluice/metrics-prometheus#PrometheusReporterFactory`) names, and what the reporter `prom`
 * gets without a factory class. Reads `metrics.reporter.<name>.port` (default 9249; a port, a
 * range such as `9250-9260`, or a list), `.bind-host` and `.filterLabelValueCharacters`.
 */
export class PrometheusReporterFactory implements MetricReporterFactory {
  readonly [METRIC_REPORTER_FACTORY_BRAND] = true as const;

  /** `metrics.reporter.<name>.*`: see {@link PrometheusReporterOptions}. */
  readonly configOptions: readonly ConfigOption<unknown>[] = [
    PrometheusReporterOptions.port("<name>"),
    PrometheusReporterOptions.bindHost("<name>"),
    PrometheusReporterOptions.filterLabelValueCharacters("<name>"),
  ];

  /** @throws ConfigurationError (`SLUICE_ERR_CONFIG`) for an invalid port range or flag. */
  createMetricReporter(context: MetricReporterContext): PrometheusReporter {
    const { name, configuration } = context;
    const portOption = PrometheusReporterOptions.port(name);
    return new PrometheusReporter({
      name,
      ports: parsePortRange(configuration.get(portOption), portOption.key),
      host: configuration.get(PrometheusReporterOptions.bindHost(name)),
      filterLabelValueCharacters: configuration.get(
        PrometheusReporterOptions.filterLabelValueCharacters(name),
      ),
    });
  }
}
