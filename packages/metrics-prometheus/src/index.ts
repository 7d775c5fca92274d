/**
 * @sluice/metrics-prometheus: a Sluice metric reporter that serves every metric of its process on
 * a Prometheus endpoint, named and labelled as Flink's `PrometheusReporter` does. Enable it with
 * `metrics.reporter.prom.port: 9250-9260` (the reporter `prom` defaults to this factory), or name
 * it for any reporter: `metrics.reporter.<name>.factory.class: prometheus`.
 */
export {
  PrometheusReporter,
  type PrometheusReporterSettings,
  replaceInvalidChars,
} from "./prometheus-reporter.js";
export { PrometheusReporterFactory } from "./prometheus-reporter-factory.js";
export { PrometheusReporterOptions } from "./prometheus-reporter-options.js";
