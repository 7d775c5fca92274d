import type { CheckpointingMode, Configuration } from "@sluice/runtime";
import {
  checkpointCoordinatorConfigurationOf,
  createRestartBackoffTimeStrategy,
} from "@sluice/runtime/plugin";
import { ExecutionCheckpointingOptions } from "@sluice/runtime-api";
import type { DemoOptions } from "./cli.js";

/**
 * Sets the keys `--checkpoint-interval` and `--checkpointing` stand for on the cluster's
 * configuration (after `--config` and `-D`, which they win over, as `--shuffle` does). Task
 * managers get them when they register.
 */
export function applyCheckpointingFlags(
  configuration: Configuration,
  flags: Pick<DemoOptions, "checkpointInterval" | "checkpointing">,
): void {
  if (flags.checkpointInterval !== undefined) {
    configuration.set(
      ExecutionCheckpointingOptions.CHECKPOINTING_INTERVAL,
      flags.checkpointInterval,
    );
  }
  if (flags.checkpointing !== undefined) {
    configuration.set(
      ExecutionCheckpointingOptions.CHECKPOINTING_MODE,
      flags.checkpointing === "exactly-once" ? "EXACTLY_ONCE" : "AT_LEAST_ONCE",
    );
  }
}

/** What the cluster's configuration says about the job's checkpoints and restarts. */
export interface RecoverySettings {
  /** The checkpointing mode; `undefined` when the job takes no checkpoints. */
  readonly mode: CheckpointingMode | undefined;
  /** Whether the job restarts after a failure (`restart-strategy.*`). */
  readonly restarts: boolean;
}

/**
 * Reads the checkpointing and restart keys as the job side will.
 *
 * @throws ConfigurationError when one holds an invalid value.
 */
export function recoverySettingsOf(configuration: Configuration): RecoverySettings {
  return {
    mode: checkpointCoordinatorConfigurationOf(configuration)?.mode,
    restarts: createRestartBackoffTimeStrategy(configuration).name !== "none",
  };
}
