import { atLeast, ConfigOptions } from "../config-option.js";

/** Options of a worker process (Flink's `TaskManagerOptions` and `CoreOptions`). */
export const TaskManagerOptions = {
  /** The address other workers use to reach this worker's data server. */
  HOST: ConfigOptions.key("taskmanager.host")
    .stringType()
    .defaultValue("127.0.0.1")
    .withDescription(
      "Address of this worker as other workers should connect to it; announced in " +
        "`ProducerDescriptor.address` and the network shuffle descriptors. Sluice defaults to " +
        "loopback.",
    ),

  /** Task slots of a worker. */
  NUM_TASK_SLOTS: ConfigOptions.key("taskmanager.numberOfTaskSlots")
    .intType()
    .defaultValue(1)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Number of task slots of a worker (`ShuffleEnvironmentContext.numberOfSlots`).",
    ),

  /** Folders for spill files. */
  TMP_DIRS: ConfigOptions.key("io.tmp.dirs")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Folders for temporary files (spilled records, blocking partitions), separated by `,`. " +
        "Unset: the operating system's temporary folder.",
    ),
} as const;
