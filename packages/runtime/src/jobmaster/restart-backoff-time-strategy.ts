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
 * `exponential-delay` measure with). Unset, it follows Flink's default
 * (before 1.19): `none` without checkpointing (`execution.checkpointing.interval` unset);
 * `fixed-delay` with unlimited attempts and a 1 s delay with checkpointing.
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
    const delay = RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY.defaultValue;
    return new FixedDelayRestartBackoffTimeStrategy(Number.POSITIVE_INFINITY, delay);
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
  return new FixedDelayRestartBackoffTimeStrategy(
    configuration.get(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS),
    configuration.get(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY),
  );
}
