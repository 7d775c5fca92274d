import type { CheckpointingMode, Configuration } from "@sluice/runtime";
import {
  checkpointCoordinatorConfigurationOf,
  createRestartBackoffTimeStrategy,
} from "@sluice/runtime/plugin";
import { ExecutionCheckpointingOptions } from "@sluice/runtime-api";

/** `--checkpointing`'s values, as the demo's command line spells them. */
export const CHECKPOINTING_FLAG_VALUES = ["exactly-once", "at-least-once"] as const;

/** The demo's checkpointing and recovery flags, parsed. */
export interface CheckpointingFlags {
  /** `--checkpoint-interval <ms>`: sets `execution.checkpointing.interval`. */
  readonly checkpointInterval: number | undefined;
  /** `--checkpointing exactly-once|at-least-once`: sets `execution.checkpointing.mode`. */
  readonly checkpointing: (typeof CHECKPOINTING_FLAG_VALUES)[number] | undefined;
  /**
   * `--kill-task-manager-after <ms>`: SIGKILL one local task manager this long into the job (in
   * batch mode, this long into the counting stage).
   */
  readonly killTaskManagerAfterMs: number | undefined;
  /**
   * `--kill-task-manager-between-stages` (batch mode): SIGKILL one local task manager right
   * after every source finished, as the counters start.
   */
  readonly killTaskManagerBetweenStages: boolean;
}

/** The help text of the flags (a section of `--help`). */
export const CHECKPOINTING_HELP = `Checkpoints and recovery:
  --checkpoint-interval <ms>
                           take a checkpoint every <ms> (execution.checkpointing.interval); the
                           sources snapshot their offsets, the counters their counts, into
                           state.checkpoints.dir (default: a folder in the system temp dir)
  --checkpointing <mode>   exactly-once (default) | at-least-once (execution.checkpointing.mode)
  --kill-task-manager-after <ms>
                           SIGKILL one task manager <ms> into the job (one-command demo only;
                           with checkpoints, not before the first one completed): a replacement
                           is started and the job restarts from its latest checkpoint
                           (restart-strategy.*; default with checkpoints: exponential-delay,
                           1 s growing to 1 min, no limit). With --mode batch: <ms>
                           into the counting stage (after every source finished); only the
                           regions that must re-run do: the sources that lived on the lost task
                           manager, and the counters that read their partitions
  --kill-task-manager-between-stages
                           --mode batch: SIGKILL one task manager right after the sources
                           finished, before the counters read; its sources' partitions are
                           lost and produced again
  A batch job given no restart-strategy.type takes none (Flink's default without checkpoints);
  with a kill the demo then sets restart-strategy.type=fixed-delay, 3 attempts, 200 ms apart.
  With --throttle the job is back-pressured: with -D execution.checkpointing.unaligned.enabled=true
  checkpoints then store the in-flight data (channel state), and a restart replays it.`;

/**
 * Sets the keys the flags stand for on the job manager's configuration (after `--config` and
 * `-D`, which they win over, as `--shuffle` does). Task managers get them at `hello`.
 */
export function applyCheckpointingFlags(
  configuration: Configuration,
  flags: CheckpointingFlags,
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

/** What the job manager's configuration says about the job's checkpoints and restarts. */
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
