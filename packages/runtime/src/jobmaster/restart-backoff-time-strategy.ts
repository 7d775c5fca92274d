import { ConfigurationError } from "@sluice/core";
import {
  ExecutionCheckpointingOptions,
  type ReadableConfig,
  RestartStrategyOptions,
} from "@sluice/runtime-api";
import { type Clock, SystemClock } from "../clock/clock.js";
import { ExponentialDelayRestartBackoffTimeStrategy } from "./failover/exponential-delay-restart-backoff-time-strategy.js";
import { FailureRateRestartBackoffTimeStrategy } from "./failover/failure-rate-restart-backoff-time-strategy.js";

/**
 * Decides whether a failed job restarts and after how long (Flink's RestartBackoffTimeStrategy).
 * The job side calls {@link notifyFailure} for every failure, then asks {@link canRestart}.
 */
export interface RestartBackoffTimeStrategy {
  /** `none`, `fixed-delay`, `failure-rate` or `exponential-delay`, for messages. */
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
 * The strategy `restart-strategy.type` names, for one job (`clock`: the time `failure-rate` and
 * `exponential-delay` measure with). Unset, it follows Flink's default since 1.19: `none` without
 * checkpointing (`execution.checkpointing.interval` unset); with checkpointing,
 * `exponential-delay` with the `restart-strategy.exponential-delay.*` keys (their defaults: 1 s
 * growing by 1.5 up to 1 min, a jitter of 0.1, reset after 1 h without failure, no limit on
 * the attempts), so a job that cannot run (a full disk) backs off instead of restarting every
 * second for ever.
 *
 * @throws ConfigurationError when a key holds an invalid value.
 */
export function createRestartBackoffTimeStrategy(
  configuration: ReadableConfig,
  clock: Clock = SystemClock,
): RestartBackoffTimeStrategy {
  const configured = configuration.getOptional(RestartStrategyOptions.RESTART_STRATEGY);
  if (configured === undefined) {
    const checkpointing = configuration.contains(
      ExecutionCheckpointingOptions.CHECKPOINTING_INTERVAL,
    );
    if (!checkpointing) return new NoRestartBackoffTimeStrategy();
    return exponentialDelay(configuration, clock);
  }
  if (configured === "none" || configured === "off" || configured === "disable") {
    return new NoRestartBackoffTimeStrategy();
  }
  const options = RestartStrategyOptions;
  if (configured === "failure-rate" || configured === "failurerate") {
    return new FailureRateRestartBackoffTimeStrategy(
      clock,
      configuration.get(options.RESTART_STRATEGY_FAILURE_RATE_MAX_FAILURES_PER_INTERVAL),
      configuration.get(options.RESTART_STRATEGY_FAILURE_RATE_FAILURE_RATE_INTERVAL),
      configuration.get(options.RESTART_STRATEGY_FAILURE_RATE_DELAY),
    );
  }
  if (configured === "exponential-delay" || configured === "exponentialdelay") {
    return exponentialDelay(configuration, clock);
  }
  return new FixedDelayRestartBackoffTimeStrategy(
    configuration.get(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS),
    configuration.get(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY),
  );
}

/** `exponential-delay` with the `restart-strategy.exponential-delay.*` keys. */
function exponentialDelay(
  configuration: ReadableConfig,
  clock: Clock,
): ExponentialDelayRestartBackoffTimeStrategy {
  const options = RestartStrategyOptions;
  const initialBackoffMs = configuration.get(
    options.RESTART_STRATEGY_EXPONENTIAL_DELAY_INITIAL_BACKOFF,
  );
  const maxBackoffMs = configuration.get(options.RESTART_STRATEGY_EXPONENTIAL_DELAY_MAX_BACKOFF);
  if (initialBackoffMs > maxBackoffMs) {
    throw new ConfigurationError(
      `${options.RESTART_STRATEGY_EXPONENTIAL_DELAY_INITIAL_BACKOFF.key} (${initialBackoffMs} ms) must not exceed ${options.RESTART_STRATEGY_EXPONENTIAL_DELAY_MAX_BACKOFF.key} (${maxBackoffMs} ms)`,
    );
  }
  return new ExponentialDelayRestartBackoffTimeStrategy(clock, {
    initialBackoffMs,
    maxBackoffMs,
    backoffMultiplier: configuration.get(
      options.RESTART_STRATEGY_EXPONENTIAL_DELAY_BACKOFF_MULTIPLIER,
    ),
    resetBackoffThresholdMs: configuration.get(
      options.RESTART_STRATEGY_EXPONENTIAL_DELAY_RESET_BACKOFF_THRESHOLD,
    ),
    jitterFactor: configuration.get(options.RESTART_STRATEGY_EXPONENTIAL_DELAY_JITTER_FACTOR),
    attemptsBeforeResetBackoff: configuration.get(
      options.RESTART_STRATEGY_EXPONENTIAL_DELAY_ATTEMPTS_BEFORE_RESET_BACKOFF,
    ),
  });
}
