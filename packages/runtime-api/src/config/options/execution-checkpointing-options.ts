import { atLeast, ConfigOptions } from "../config-option.js";

/** The guarantees a job's checkpoints can give (the values of `execution.checkpointing.mode`). */
export const CHECKPOINTING_MODES = ["EXACTLY_ONCE", "AT_LEAST_ONCE"] as const;

/** What happens to a job's completed checkpoints when the job ends. */
export const EXTERNALIZED_CHECKPOINT_RETENTIONS = [
  "NO_EXTERNALIZED_CHECKPOINTS",
  "DELETE_ON_CANCELLATION",
  "RETAIN_ON_CANCELLATION",
] as const;

/** One of {@link EXTERNALIZED_CHECKPOINT_RETENTIONS}. */
export type ExternalizedCheckpointRetention = (typeof EXTERNALIZED_CHECKPOINT_RETENTIONS)[number];

/**
 * Options of the job side's checkpoint coordinator and of the tasks' barrier handling (Flink's
 * `ExecutionCheckpointingOptions`). Checkpointing is on when `execution.checkpointing.interval`
 * is set.
 */
export const ExecutionCheckpointingOptions = {
  /** How often checkpoints are triggered; unset: no checkpoints. */
  CHECKPOINTING_INTERVAL: ConfigOptions.key("execution.checkpointing.interval")
    .durationType()
    .noDefaultValue()
    .withValidator(atLeast(10, "an interval (ms)"))
    .withDescription(
      "How often the job side triggers a checkpoint at the job's sources. Unset: checkpointing " +
        "is off (tasks read their gates without barrier handlers and nothing is snapshotted). " +
        "At least 10 ms, as in Flink.",
    ),

  /** Exactly-once (aligned barriers) or at-least-once (tracked barriers). */
  CHECKPOINTING_MODE: ConfigOptions.key("execution.checkpointing.mode")
    .enumType(CHECKPOINTING_MODES)
    .defaultValue("EXACTLY_ONCE")
    .withDescription(
      "`EXACTLY_ONCE`: sources send aligned barriers and every task with inputs aligns them " +
        "(a channel that delivered the barrier is held until all did), so a snapshot reflects " +
        "exactly the records before the barrier and a restored job counts every record once. " +
        "`AT_LEAST_ONCE`: barriers are tracked without holding any channel; after a restore " +
        "some records are processed twice, none is lost.",
    ),

  /** Whether exactly-once checkpoints may be unaligned. */
  ENABLE_UNALIGNED: ConfigOptions.key("execution.checkpointing.unaligned.enabled")
    .booleanType()
    .defaultValue(false)
    .withDeprecatedKeys("execution.checkpointing.unaligned")
    .withDescription(
      "Unaligned checkpoints (exactly-once only): a barrier overtakes the data queued in " +
        "output subpartitions and input channels, as a priority event, and that in-flight data " +
        "is stored with the task's snapshot as channel state and replayed on restore. A " +
        "checkpoint then no longer waits for back-pressured queues to drain, at the cost of " +
        "larger snapshots. With `execution.checkpointing.aligned-checkpoint-timeout` > 0, " +
        "checkpoints start aligned and turn unaligned only when the alignment takes longer.",
    ),

  /** How long a checkpoint stays aligned before it turns unaligned. */
  ALIGNED_CHECKPOINT_TIMEOUT: ConfigOptions.key(
    "execution.checkpointing.aligned-checkpoint-timeout",
  )
    .durationType()
    .defaultValue("0s")
    .withDeprecatedKeys("execution.checkpointing.alignment-timeout")
    .withValidator(atLeast(0, "a timeout (ms)"))
    .withDescription(
      "Only with `execution.checkpointing.unaligned.enabled`. `0`: every checkpoint is " +
        "unaligned from the start. Larger: a checkpoint starts aligned (remote channels " +
        "announce its barriers ahead of the data) and turns unaligned at a task whose " +
        "alignment, counted from the checkpoint's first barrier or announcement there, takes " +
        "longer; the task then sends it on unaligned. A barrier still queued in a producer's " +
        "back-pressured output once this much time has passed since the checkpoint started " +
        "turns unaligned there too: it overtakes the queued data, which is stored as the " +
        "producer's output channel state.",
    ),

  /** Whether checkpoints go on after some tasks finished (FLIP-147). */
  CHECKPOINTS_AFTER_TASKS_FINISH: ConfigOptions.key(
    "execution.checkpointing.checkpoints-after-tasks-finish",
  )
    .booleanType()
    .defaultValue(true)
    .withDeprecatedKeys("execution.checkpointing.checkpoints-after-tasks-finish.enabled")
    .withDescription(
      "Checkpoints go on after some tasks finished (FLIP-147): they are triggered at the " +
        "running tasks none of whose producers still runs, wait for the running tasks only, " +
        "and record the finished ones, which a restore from them deploys finished. A task " +
        "with a checkpoint listener (an exactly-once sink) then waits, once its input ended, " +
        "for a checkpoint of its final state to complete before it finishes, so its last " +
        "output is committed. `false`: no checkpoint starts while a task is not running.",
    ),

  /** How long a checkpoint may take before it is aborted. */
  CHECKPOINTING_TIMEOUT: ConfigOptions.key("execution.checkpointing.timeout")
    .durationType()
    .defaultValue("10min")
    .withValidator(atLeast(10, "a timeout (ms)"))
    .withDescription(
      "A checkpoint not acknowledged by every task within this time after its trigger is " +
        "aborted (`CHECKPOINT_EXPIRED`) and its snapshot files are deleted.",
    ),

  /** How many checkpoints may be in progress at once. */
  MAX_CONCURRENT_CHECKPOINTS: ConfigOptions.key(
    "execution.checkpointing.max-concurrent-checkpoints",
  )
    .intType()
    .defaultValue(1)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "The number of checkpoints that may be pending at the same time. A periodic trigger that " +
        "finds this many pending is skipped. A completed checkpoint subsumes (aborts) every " +
        "older pending one.",
    ),

  /** Consecutive failed checkpoints tolerated before the job fails over. */
  TOLERABLE_FAILURE_NUMBER: ConfigOptions.key(
    "execution.checkpointing.tolerable-failed-checkpoints",
  )
    .intType()
    .defaultValue(0)
    .withValidator(atLeast(0, "a count"))
    .withDescription(
      "How many checkpoint failures in a row are tolerated before the job fails over (restarts " +
        "by its restart strategy, or fails). Only failures that point at a problem count: " +
        "expired checkpoints, snapshots that threw or could not be written, and `_metadata` " +
        "that could not be written; declines because a task was not ready, was finishing, or " +
        "saw a cancellation marker do not. A completed checkpoint resets the count. Flink " +
        "leaves the key unset, which means 0.",
    ),

  /** Whether completed checkpoints survive the job's end. */
  EXTERNALIZED_CHECKPOINT_RETENTION: ConfigOptions.key(
    "execution.checkpointing.externalized-checkpoint-retention",
  )
    .enumType(EXTERNALIZED_CHECKPOINT_RETENTIONS)
    .defaultValue("NO_EXTERNALIZED_CHECKPOINTS")
    .withDescription(
      "What happens to the retained completed checkpoints under `state.checkpoints.dir` when " +
        "the job ends. `NO_EXTERNALIZED_CHECKPOINTS`: they are deleted. " +
        "`DELETE_ON_CANCELLATION`: kept when the job FAILED, deleted when it finished or was " +
        "canceled. `RETAIN_ON_CANCELLATION`: always kept (delete them yourself).",
    ),
} as const;
