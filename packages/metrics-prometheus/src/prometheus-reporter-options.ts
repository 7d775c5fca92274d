import {
  type ConfigOption,
  ConfigOptions,
  metricReporterKeyPrefix,
  PORT_RANGE_SYNTAX,
  parsePortRange,
} from "@sluice/runtime-api";

function port(name: string): ConfigOption<string> {
  const key = `${metricReporterKeyPrefix(name)}port`;
  return ConfigOptions.key(key)
    .stringType()
    .defaultValue("9249")
    .withValidator((value) => {
      try {
        parsePortRange(value, key);
        return undefined;
      } catch {
        return PORT_RANGE_SYNTAX;
      }
    })
    .withDescription(
      "The port of the Prometheus endpoint of the reporter named `<name>`: a port, a range " +
        "(`9250-9260`) or a list; each process takes the first free one, so several processes " +
        "on one host can share the setting. `0` takes any free port. Setting " +
        "`metrics.reporter.prom.port` alone enables the bundled reporter under the name `prom`.",
    );
}

function bindHost(name: string): ConfigOption<string> {
  return ConfigOptions.key(`${metricReporterKeyPrefix(name)}bind-host`)
    .stringType()
    .defaultValue("127.0.0.1")
    .withDescription(
      "Sluice: the local address the Prometheus endpoint of the reporter named `<name>` binds " +
        "to. Sluice defaults to loopback, as for the data port; use `0.0.0.0` (Flink's " +
        "behaviour) so that a Prometheus server on another host can scrape it.",
    );
}

function filterLabelValueCharacters(name: string): ConfigOption<boolean> {
  return ConfigOptions.key(`${metricReporterKeyPrefix(name)}filterLabelValueCharacters`)
    .booleanType()
    .defaultValue(true)
    .withDescription(
      "Whether label values keep only `[a-zA-Z0-9:_]` (others become `_`), as Flink's " +
        "Prometheus reporter does by default. `false` keeps any character.",
    );
}

/**
 * Options of the Prometheus reporter (Flink's `PrometheusReporterOptions`), per reporter name:
 * `port("prom")` is `metrics.reporter.prom.port`. Only this package reads them, so it owns them;
 * {@link PrometheusReporterFactory.configOptions} declares them for the generated docs.
 */
export const PrometheusReporterOptions = {
  /** `metrics.reporter.<name>.port`. */
  port,
  /** `metrics.reporter.<name>.bind-host`. */
  bindHost,
  /** `metrics.reporter.<name>.filterLabelValueCharacters`. */
  filterLabelValueCharacters,
} as const;
