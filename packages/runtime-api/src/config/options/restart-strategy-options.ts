import { atLeast, ConfigOptions } from "../config-option.js";

/**
 * The restart strategies (the values of `restart-strategy.type`, with Flink's aliases): no
 * restart, a fixed number of restarts with a fixed delay, restarts while failures stay under a
 * rate, or restarts with an exponentially growing delay.
 */
export const RESTART_STRATEGIES = [
  "none",
  "off",
  "disable",
  "fixed-delay",
  "fixeddelay",
  "failure-rate",
  "failurerate",
  "exponential-delay",
  "exponentialdelay",
] as const;

/** One of {@link RESTART_STRATEGIES}. */
export type RestartStrategyName = (typeof RESTART_STRATEGIES)[number];

/** How a job recovers from a failed task or a lost worker (Flink's `RestartStrategyOptions`). */
export const RestartStrategyOptions = {
  /** Which restart strategy a job uses. */
  RESTART_STRATEGY: ConfigOptions.key("restart-strategy.type")
    .enumType(RESTART_STRATEGIES)
    .noDefaultValue()
    .withDeprecatedKeys("restart-strategy")
    .withDescription(
      "`none` (also `off`, `disable`): a failed task fails the job. `fixed-delay` (also " +
        "`fixeddelay`): at most `restart-strategy.fixed-delay.attempts` restarts, each after " +
        "`restart-strategy.fixed-delay.delay`. `failure-rate` (also `failurerate`): restarts " +
        "after `restart-strategy.failure-rate.delay` while no more than " +
        "`restart-strategy.failure-rate.max-failures-per-interval` failures fall within " +
        "`restart-strategy.failure-rate.failure-rate-interval`. `exponential-delay` (also " +
        "`exponentialdelay`): restarts after a delay that grows from " +
        "`restart-strategy.exponential-delay.initial-backoff` by the backoff multiplier up to " +
        "`restart-strategy.exponential-delay.max-backoff`. What restarts is the job's failover: " +
        "the regions that must re-run for a job without checkpoints, every task (restored from " +
        "the newest completed checkpoint) for a job with them. Unset: `none` without " +
        "checkpointing; with checkpointing, `exponential-delay` with its keys' defaults " +
        "(Flink's default since 1.19). Whatever the strategy, a failure caused by a " +
        "configuration error (`SLUICE_ERR_CONFIG`, such as a shuffle plugin that refuses the " +
        "job's partition types) fails the job at once, and every failover is reported with " +
        "its cause (`DeployOptions.statusListener`).",
    ),

  /** How often a job restarts before it fails. */
  RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS: ConfigOptions.key("restart-strategy.fixed-delay.attempts")
    .intType()
    .defaultValue(1)
    .withValidator(atLeast(0, "a count"))
    .withDescription(
      "The number of restarts `fixed-delay` allows; the failure after the last one fails the job.",
    ),

  /** How long a job waits between canceling its tasks and deploying them again. */
  RESTART_STRATEGY_FIXED_DELAY_DELAY: ConfigOptions.key("restart-strategy.fixed-delay.delay")
    .durationType()
    .defaultValue("1s")
    .withValidator(atLeast(0, "a delay (ms)"))
    .withDescription(
      "How long `fixed-delay` waits after every task of the failed attempt ended before it " +
        "deploys the next attempt (time for a lost worker to be replaced, for connections to " +
        "time out).",
    ),

  /** How many failures `failure-rate` tolerates within its interval. */
  RESTART_STRATEGY_FAILURE_RATE_MAX_FAILURES_PER_INTERVAL: ConfigOptions.key(
    "restart-strategy.failure-rate.max-failures-per-interval",
  )
    .intType()
    .defaultValue(1)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "The most restarts `failure-rate` allows within `restart-strategy.failure-rate.failure-rate-interval`; " +
        "one failure more within it fails the job.",
    ),

  /** The interval `failure-rate` counts failures in. */
  RESTART_STRATEGY_FAILURE_RATE_FAILURE_RATE_INTERVAL: ConfigOptions.key(
    "restart-strategy.failure-rate.failure-rate-interval",
  )
    .durationType()
    .defaultValue("1min")
    .withValidator(atLeast(1, "a duration (ms)"))
    .withDescription("The time window `failure-rate` measures the failure rate in."),

  /** How long `failure-rate` waits before a restart. */
  RESTART_STRATEGY_FAILURE_RATE_DELAY: ConfigOptions.key("restart-strategy.failure-rate.delay")
    .durationType()
    .defaultValue("1s")
    .withValidator(atLeast(0, "a delay (ms)"))
    .withDescription("How long `failure-rate` waits before each restart."),

  /** The first delay of `exponential-delay`. */
  RESTART_STRATEGY_EXPONENTIAL_DELAY_INITIAL_BACKOFF: ConfigOptions.key(
    "restart-strategy.exponential-delay.initial-backoff",
  )
    .durationType()
    .defaultValue("1s")
    .withValidator(atLeast(1, "a duration (ms)"))
    .withDescription(
      "The delay before the first restart of `exponential-delay`, and after a reset.",
    ),

  /** The longest delay of `exponential-delay`. */
  RESTART_STRATEGY_EXPONENTIAL_DELAY_MAX_BACKOFF: ConfigOptions.key(
    "restart-strategy.exponential-delay.max-backoff",
  )
    .durationType()
    .defaultValue("1min")
    .withValidator(atLeast(1, "a duration (ms)"))
    .withDescription(
      "The longest delay `exponential-delay` waits before a restart (Flink 1.19's default).",
    ),

  /** How much the delay grows with each failure. */
  RESTART_STRATEGY_EXPONENTIAL_DELAY_BACKOFF_MULTIPLIER: ConfigOptions.key(
    "restart-strategy.exponential-delay.backoff-multiplier",
  )
    .numberType()
    .defaultValue(1.5)
    .withValidator((value) => (value > 1 ? undefined : "a number greater than 1"))
    .withDescription(
      "What `exponential-delay` multiplies the delay by after each failure, up to the max " +
        "backoff (Flink 1.19's default).",
    ),

  /** How long a job must run without failure for the delay to start over. */
  RESTART_STRATEGY_EXPONENTIAL_DELAY_RESET_BACKOFF_THRESHOLD: ConfigOptions.key(
    "restart-strategy.exponential-delay.reset-backoff-threshold",
  )
    .durationType()
    .defaultValue("1h")
    .withValidator(atLeast(1, "a duration (ms)"))
    .withDescription(
      "How long the job must run without a failure (after the last delay) for " +
        "`exponential-delay` to start again from the initial backoff and count its attempts anew.",
    ),

  /** The random share added to or taken from each delay. */
  RESTART_STRATEGY_EXPONENTIAL_DELAY_JITTER_FACTOR: ConfigOptions.key(
    "restart-strategy.exponential-delay.jitter-factor",
  )
    .numberType()
    .defaultValue(0.1)
    .withValidator((value) => (value >= 0 && value <= 1 ? undefined : "a number in [0, 1]"))
    .withDescription(
      "The share of the delay `exponential-delay` adds or takes at random, so that jobs that " +
        "failed together do not restart together.",
    ),

  /** How many restarts `exponential-delay` allows before the delay is reset. */
  RESTART_STRATEGY_EXPONENTIAL_DELAY_ATTEMPTS_BEFORE_RESET_BACKOFF: ConfigOptions.key(
    "restart-strategy.exponential-delay.attempts-before-reset-backoff",
  )
    .intType()
    .defaultValue(2_147_483_647)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "The most restarts `exponential-delay` allows until its backoff is reset (the job ran " +
        "`reset-backoff-threshold` without failure); one failure more fails the job. Default: " +
        "Integer.MAX_VALUE, as Flink.",
    ),
} as const;
