import {
  ExecutionCheckpointingOptions,
  type ReadableConfig,
  RestartStrategyOptions,
} from "@sluice/runtime-api";

/**
 * Decides whether a failed job restarts and after how long (Flink's RestartBackoffTimeStrategy).
 * The job side calls {@link notifyFailure} for every failure, then asks {@link canRestart}.
 */
export interface RestartBackoffTimeStrategy {
  /** `none` or `fixed-delay`, for messages. */
  readonly name: string;
  /** Records one failure of the job. */
  notifyFailure(cause: Error): void;
  /** Whether the job may restart after the failures recorded so far. */
  canRestart(): boolean;
  /** Milliseconds to wait before the restart. */
  getBackoffTime(): number;
}

/** Flink's fixed-delay strategy: at most `maxAttempts` restarts, each after `delayMs`. */
class FixedDelayRestartBackoffTimeStrategy implements RestartBackoffTimeStrategy {
  readonly name = "fixed-delay";
  private failures = 0;

  constructor(
    private readonly maxAttempts: number,
    private readonly delayMs: number,
  ) {}

  notifyFailure(): void {
    this.failures++;
  }

  canRestart(): boolean {
    return this.failures <= this.maxAttempts;
  }

  getBackoffTime(): number {
    return this.delayMs;
  }
}

/** Flink's no-restart strategy: the first failure fails the job. */
class NoRestartBackoffTimeStrategy implements RestartBackoffTimeStrategy {
  readonly name = "none";
  notifyFailure(): void {}
  canRestart(): boolean {
    return false;
  }
  getBackoffTime(): number {
    return 0;
  }
}

/**
 * The strategy `restart-strategy.type` names, for one job. Unset, it follows Flink's default
 * (before 1.19): `none` without checkpointing (`execution.checkpointing.interval` unset);
 * `fixed-delay` with unlimited attempts and a 1 s delay with checkpointing.
 *
 * @throws ConfigurationError when a key holds an invalid value.
 */
export function createRestartBackoffTimeStrategy(
  configuration: ReadableConfig,
): RestartBackoffTimeStrategy {
  const configured = configuration.getOptional(RestartStrategyOptions.RESTART_STRATEGY);
  if (configured === undefined) {
    const checkpointing = configuration.contains(
      ExecutionCheckpointingOptions.CHECKPOINTING_INTERVAL,
    );
    if (!checkpointing) return new NoRestartBackoffTimeStrategy();
    const delay = RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY.defaultValue;
    return new FixedDelayRestartBackoffTimeStrategy(Number.POSITIVE_INFINITY, delay);
  }
  if (configured === "none" || configured === "off" || configured === "disable") {
    return new NoRestartBackoffTimeStrategy();
  }
  return new FixedDelayRestartBackoffTimeStrategy(
    configuration.get(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS),
    configuration.get(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY),
  );
}
