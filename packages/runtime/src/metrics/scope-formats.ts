import { MetricOptions, type ReadableConfig, readableConfigOf } from "@sluice/runtime-api";
import { ScopeFormat } from "./scope-format.js";

/**
 * The scope formats of every kind of component group (Flink's `ScopeFormats`), from
 * `metrics.scope.*`: job manager → job on the job manager; task manager → job on the task
 * manager → task → operator.
 */
export class ScopeFormats {
  /** `metrics.scope.jm`. */
  readonly jobManager: ScopeFormat;
  /** `metrics.scope.jm-job`. */
  readonly jobManagerJob: ScopeFormat;
  /** `metrics.scope.tm`. */
  readonly taskManager: ScopeFormat;
  /** `metrics.scope.tm-job`. */
  readonly taskManagerJob: ScopeFormat;
  /** `metrics.scope.task`. */
  readonly task: ScopeFormat;
  /** `metrics.scope.operator`. */
  readonly operator: ScopeFormat;

  private constructor(configuration: ReadableConfig) {
    const format = (option: typeof MetricOptions.SCOPE_NAMING_JM, parent?: ScopeFormat) =>
      new ScopeFormat(configuration.get(option), parent, option.key);
    this.jobManager = format(MetricOptions.SCOPE_NAMING_JM);
    this.jobManagerJob = format(MetricOptions.SCOPE_NAMING_JM_JOB, this.jobManager);
    this.taskManager = format(MetricOptions.SCOPE_NAMING_TM);
    this.taskManagerJob = format(MetricOptions.SCOPE_NAMING_TM_JOB, this.taskManager);
    this.task = format(MetricOptions.SCOPE_NAMING_TASK, this.taskManagerJob);
    this.operator = format(MetricOptions.SCOPE_NAMING_OPERATOR, this.task);
  }

  /**
   * The formats a configuration sets (Flink's defaults for the keys it does not set).
   *
   * @throws ConfigurationError for a format that inherits from a parent it does not have.
   */
  static fromConfiguration(configuration: ReadableConfig): ScopeFormats {
    return new ScopeFormats(configuration);
  }

  /** Flink's default formats. */
  static defaults(): ScopeFormats {
    return new ScopeFormats(readableConfigOf({}));
  }
}
