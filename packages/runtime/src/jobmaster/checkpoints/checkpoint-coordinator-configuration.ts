import path from "node:path";
import {
  CheckpointingOptions,
  ExecutionCheckpointingOptions,
  type ExternalizedCheckpointRetention,
  type ReadableConfig,
} from "@sluice/runtime-api";
import { FsCheckpointStorage } from "../../checkpointing/fs-checkpoint-storage.js";
import type { CheckpointingMode } from "../../messages/checkpointing-mode.js";

/**
 * How a job's checkpoint coordinator works (Flink's CheckpointCoordinatorConfiguration), read
 * from the `execution.checkpointing.*` and `state.checkpoints.*` keys.
 */
export interface CheckpointCoordinatorConfiguration {
  /** Milliseconds between periodic triggers (`execution.checkpointing.interval`). */
  readonly interval: number;
  /** `execution.checkpointing.mode`. */
  readonly mode: CheckpointingMode;
  /** Milliseconds before a pending checkpoint expires (`execution.checkpointing.timeout`). */
  readonly timeout: number;
  /** `execution.checkpointing.max-concurrent-checkpoints`. */
  readonly maxConcurrentCheckpoints: number;
  /** `execution.checkpointing.tolerable-failed-checkpoints`. */
  readonly tolerableCheckpointFailureNumber: number;
  /** `state.checkpoints.num-retained`. */
  readonly maxRetainedCheckpoints: number;
  /** `execution.checkpointing.externalized-checkpoint-retention`. */
  readonly retention: ExternalizedCheckpointRetention;
  /** `state.checkpoints.dir`, or its default in the system's temporary folder. */
  readonly checkpointsDirectory: string;
  /** `state.savepoints.dir`: where a savepoint that names no folder goes; unset: none. */
  readonly savepointsDirectory?: string;
  /** `execution.checkpointing.unaligned.enabled` (exactly-once only). */
  readonly unalignedCheckpointsEnabled: boolean;
  /** `execution.checkpointing.aligned-checkpoint-timeout` in ms (0: unaligned from the start). */
  readonly alignedCheckpointTimeout: number;
  /** `execution.checkpointing.checkpoints-after-tasks-finish` (FLIP-147). */
  readonly checkpointsAfterTasksFinish: boolean;
}

/**
 * The coordinator configuration of a job with `configuration`; `undefined` when
 * `execution.checkpointing.interval` is unset (the job takes no checkpoints).
 *
 * @throws ConfigurationError when a key holds an invalid value.
 */
export function checkpointCoordinatorConfigurationOf(
  configuration: ReadableConfig,
): CheckpointCoordinatorConfiguration | undefined {
  const interval = configuration.getOptional(ExecutionCheckpointingOptions.CHECKPOINTING_INTERVAL);
  if (interval === undefined) return undefined;
  return Object.freeze({
    interval,
    mode: configuration.get(ExecutionCheckpointingOptions.CHECKPOINTING_MODE),
    timeout: configuration.get(ExecutionCheckpointingOptions.CHECKPOINTING_TIMEOUT),
    maxConcurrentCheckpoints: configuration.get(
      ExecutionCheckpointingOptions.MAX_CONCURRENT_CHECKPOINTS,
    ),
    tolerableCheckpointFailureNumber: configuration.get(
      ExecutionCheckpointingOptions.TOLERABLE_FAILURE_NUMBER,
    ),
    maxRetainedCheckpoints: configuration.get(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS),
    retention: configuration.get(ExecutionCheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION),
    checkpointsDirectory: FsCheckpointStorage.baseDirectoryOf(configuration),
    ...savepointsDirectoryOf(configuration),
    unalignedCheckpointsEnabled: configuration.get(ExecutionCheckpointingOptions.ENABLE_UNALIGNED),
    alignedCheckpointTimeout: configuration.get(
      ExecutionCheckpointingOptions.ALIGNED_CHECKPOINT_TIMEOUT,
    ),
    checkpointsAfterTasksFinish: configuration.get(
      ExecutionCheckpointingOptions.CHECKPOINTS_AFTER_TASKS_FINISH,
    ),
  });
}

/** `state.savepoints.dir`, resolved, when set. */
function savepointsDirectoryOf(configuration: ReadableConfig): { savepointsDirectory?: string } {
  const folder = configuration.getOptional(CheckpointingOptions.SAVEPOINT_DIRECTORY);
  return folder === undefined ? {} : { savepointsDirectory: path.resolve(folder) };
}

/**
 * Whether `execution.checkpointing.externalized-checkpoint-retention` keeps a job's retained
 * checkpoints once it ended `status`: `RETAIN_ON_CANCELLATION` always, `DELETE_ON_CANCELLATION`
 * when it failed, `NO_EXTERNALIZED_CHECKPOINTS` never.
 */
export function retainsCheckpointsAfter(
  retention: ExternalizedCheckpointRetention,
  status: "FINISHED" | "FAILED" | "CANCELED",
): boolean {
  return (
    retention === "RETAIN_ON_CANCELLATION" ||
    (retention === "DELETE_ON_CANCELLATION" && status === "FAILED")
  );
}
