import { atLeast, ConfigOptions } from "../config-option.js";

/**
 * The restart strategies Sluice implements (the values of `restart-strategy.type`, with Flink's
 * aliases): no restart, or a fixed number of restarts with a fixed delay.
 */
export const RESTART_STRATEGIES = ["none", "off", "disable", "fixed-delay", "fixeddelay"] as const;

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
        "`fixeddelay`): the job cancels every task, waits `restart-strategy.fixed-delay.delay` " +
        "and deploys every task again, restored from the newest completed checkpoint, at most " +
        "`restart-strategy.fixed-delay.attempts` times. Unset: `none` without checkpointing; " +
        "with checkpointing, `fixed-delay` with unlimited attempts and a 1 s delay (Flink's " +
        "default before 1.19; Flink's `failure-rate` and `exponential-delay` are not " +
        "implemented).",
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
} as const;
