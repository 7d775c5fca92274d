import { atLeast, ConfigOptions } from "../config-option.js";

/** Where checkpoints are stored and how many are kept (Flink's `CheckpointingOptions`). */
export const CheckpointingOptions = {
  /** The folder every task snapshot and `_metadata` file goes to. */
  CHECKPOINTS_DIRECTORY: ConfigOptions.key("state.checkpoints.dir")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Folder of the checkpoints: checkpoint `n` of job `j` is `<dir>/<j>/chk-<n>/`, with one " +
        "file per task (written by the worker that runs it) and the `_metadata` file (written " +
        "by the job side when every task acknowledged). Every file is written to a temporary " +
        "name and renamed, so a reader never sees half a file. Workers and the job side must " +
        "see the same folder (a restarted task reads its snapshot from the path in its " +
        "deployment descriptor). Unset: `sluice-checkpoints` in the operating system's " +
        "temporary folder.",
    ),

  /** The default folder savepoints go to (Flink's `state.savepoints.dir`). */
  SAVEPOINT_DIRECTORY: ConfigOptions.key("state.savepoints.dir")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "The default target folder of savepoints, for a savepoint or stop-with-savepoint that " +
        "names none: savepoint `n` of job `j` is a folder `savepoint-<first 6 hex digits of " +
        "j>-<12 random hex digits>` in it, with one file per task and `_metadata`, which names " +
        "the task files relative to itself, so the folder can be moved or copied elsewhere and " +
        "restored from there. Workers and the job side must see the same folder. Savepoints " +
        "are never deleted by the job. Unset: a savepoint must name its target folder.",
    ),

  /** How many completed checkpoints are kept. */
  MAX_RETAINED_CHECKPOINTS: ConfigOptions.key("state.checkpoints.num-retained")
    .intType()
    .defaultValue(1)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "The number of completed checkpoints kept; when one more completes, the oldest is " +
        "deleted. A restart restores the newest.",
    ),
} as const;
