import { type ConfigOption, ConfigOptions } from "../config-option.js";

/** The key prefix of every option of the reporter named `name`: `metrics.reporter.<name>.`. */
export function metricReporterKeyPrefix(name: string): string {
  return `metrics.reporter.${name}.`;
}

function reporterFactoryClass(name: string): ConfigOption<string | undefined> {
  return ConfigOptions.key(`${metricReporterKeyPrefix(name)}factory.class`)
    .classType()
    .noDefaultValue()
    .withDescription(
      "The `MetricReporterFactory` of the reporter named `<name>`, as `<module>#<export>` " +
        "(resolved like `shuffle-service-factory.class`). Alias: `prometheus` = " +
        "`@sluice/metrics-prometheus#PrometheusReporterFactory`. The reporter named `prom` " +
        "defaults to it, so `metrics.reporter.prom.port` alone enables the bundled Prometheus " +
        "reporter; any other name needs this key.",
    );
}

function reporterInterval(name: string): ConfigOption<number> {
  return ConfigOptions.key(`${metricReporterKeyPrefix(name)}interval`)
    .durationType()
    .defaultValue("10s")
    .withDescription(
      "How often the reporter named `<name>` pushes its metrics (its `report()` is called). Only " +
        "for push-based reporters; a reporter without `report()`, such as Prometheus, is scraped " +
        "instead.",
    );
}

/** The options of one named metric reporter (`metrics.reporter.<name>.*`). */
export const MetricReporterOptions = {
  /** `metrics.reporter.<name>.factory.class` for `name`. */
  factoryClass: reporterFactoryClass,
  /** `metrics.reporter.<name>.interval` for `name`. */
  interval: reporterInterval,
} as const;

/** Options of the metric system (Flink's `MetricOptions`): reporters and scope formats. */
export const MetricOptions = {
  /** Which of the configured reporters to start. */
  REPORTERS_LIST: ConfigOptions.key("metrics.reporters")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "A comma-separated list of reporter names: only these of the reporters configured under " +
        "`metrics.reporter.<name>.*` are started. Unset: every configured reporter is started.",
    ),

  /** The reporter factory, documented with the `<name>` placeholder. */
  REPORTER_FACTORY_CLASS: reporterFactoryClass("<name>"),

  /** The push interval, documented with the `<name>` placeholder. */
  REPORTER_INTERVAL: reporterInterval("<name>"),

  /** Any other parameter of a named reporter. */
  REPORTER_CONFIG_PARAMETER: ConfigOptions.key("metrics.reporter.<name>.<parameter>")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Any parameter of the reporter named `<name>`: the reporter gets every key under " +
        "`metrics.reporter.<name>.` (`MetricReporterContext.properties`, keyed by `<parameter>`).",
    ),

  /** The delimiter of metric identifiers. */
  SCOPE_DELIMITER: ConfigOptions.key("metrics.scope.delimiter")
    .stringType()
    .defaultValue(".")
    .withDescription("The delimiter that joins the components of a metric identifier."),

  /** The scope of job-manager metrics. */
  SCOPE_NAMING_JM: ConfigOptions.key("metrics.scope.jm")
    .stringType()
    .defaultValue("<host>.jobmanager")
    .withDescription(
      "The scope format of metrics of the job manager (the coordinator). Variables: `<host>`.",
    ),

  /** The scope of a job's metrics on the job manager. */
  SCOPE_NAMING_JM_JOB: ConfigOptions.key("metrics.scope.jm-job")
    .stringType()
    .defaultValue("<host>.jobmanager.<job_name>")
    .withDeprecatedKeys("metrics.scope.jm.job")
    .withDescription(
      "The scope format of a job's metrics on the job manager. Variables: those of " +
        "`metrics.scope.jm`, `<job_id>`, `<job_name>`. A leading `*` stands for the parent's " +
        "format.",
    ),

  /** The scope of task-manager metrics. */
  SCOPE_NAMING_TM: ConfigOptions.key("metrics.scope.tm")
    .stringType()
    .defaultValue("<host>.taskmanager.<tm_id>")
    .withDescription(
      "The scope format of metrics of a task manager (a worker, e.g. " +
        "`Status.Shuffle.Netty.*`). Variables: `<host>`, `<tm_id>`.",
    ),

  /** The scope of a job's metrics on a task manager. */
  SCOPE_NAMING_TM_JOB: ConfigOptions.key("metrics.scope.tm-job")
    .stringType()
    .defaultValue("<host>.taskmanager.<tm_id>.<job_name>")
    .withDeprecatedKeys("metrics.scope.tm.job")
    .withDescription(
      "The scope format of a job's metrics on a task manager. Variables: those of " +
        "`metrics.scope.tm`, `<job_id>`, `<job_name>`. A leading `*` stands for the parent's " +
        "format.",
    ),

  /** The scope of a task's (subtask's) metrics. */
  SCOPE_NAMING_TASK: ConfigOptions.key("metrics.scope.task")
    .stringType()
    .defaultValue("<host>.taskmanager.<tm_id>.<job_name>.<task_name>.<subtask_index>")
    .withDescription(
      "The scope format of a task's metrics (one per subtask, e.g. `numRecordsInPerSecond`). " +
        "Variables: those of `metrics.scope.tm-job`, `<task_id>`, `<task_name>`, " +
        "`<task_attempt_id>`, `<task_attempt_num>`, `<subtask_index>`.",
    ),

  /** The scope of an operator's metrics. */
  SCOPE_NAMING_OPERATOR: ConfigOptions.key("metrics.scope.operator")
    .stringType()
    .defaultValue("<host>.taskmanager.<tm_id>.<job_name>.<operator_name>.<subtask_index>")
    .withDescription(
      "The scope format of an operator's metrics (groups a task's code adds with " +
        "`addOperator`). Variables: those of `metrics.scope.task`, `<operator_id>`, " +
        "`<operator_name>`.",
    ),
} as const;
