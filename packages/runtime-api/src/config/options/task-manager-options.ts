import { atLeast, ConfigOptions } from "../config-option.js";

/** The values of `taskmanager.task-slots.mode`. */
export const TASK_SLOTS_MODES = ["single-loop", "threaded"] as const;

/** How a worker runs its slots (`taskmanager.task-slots.mode`). */
export type TaskSlotsMode = (typeof TASK_SLOTS_MODES)[number];

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
      "Number of task slots of a worker (Flink's key): a task manager registers this many slots " +
        "with the job manager, whose default placement puts that many subtasks of a job on it. " +
        "With `taskmanager.task-slots.mode: threaded` each slot is a worker thread " +
        "(`ShuffleEnvironmentContext.numberOfSlots`).",
    ),

  /** Whether a worker's slots share its event loop or run on worker threads of their own. */
  TASK_SLOTS_MODE: ConfigOptions.key("taskmanager.task-slots.mode")
    .enumType(TASK_SLOTS_MODES)
    .defaultValue("single-loop")
    .withDescription(
      "How a worker runs its slots. `single-loop`: every task on the process's one event loop " +
        "(one core). `threaded`: each of the `taskmanager.numberOfTaskSlots` slots on a worker " +
        "thread of its own, as Flink runs a thread per slot, over network memory the threads " +
        "share: a channel between two slots hands buffers over without a copy, and the main " +
        "thread's data server serves every slot's partitions to other workers. Needs a shuffle " +
        "plugin that supports it (`tcp`, `ws`) and user code loadable by module reference " +
        "(the TaskExecutor's `userCodeModule`, or job modules).",
    ),

  /** Whether slot 0 of a threaded worker runs on its main thread instead of a thread of its own. */
  TASK_SLOTS_MAIN_THREAD_SLOT: ConfigOptions.key("taskmanager.task-slots.main-thread-slot")
    .booleanType()
    .defaultValue(false)
    .withDescription(
      "With `taskmanager.task-slots.mode: threaded`: run slot 0 on the worker's main thread, " +
        "beside the control plane and the data server, and slots 1 to N-1 on worker threads " +
        "(N slots on N-1 threads). It saves one V8 isolate with the runtime loaded into it " +
        "(about 23 MiB of RSS at rest), and costs slot 0's tasks the main thread's core, which " +
        "they share with the control plane and every slot's remote network I/O. Slot 0 runs " +
        "the same code as a slot thread (its own TaskExecutor over the shared network memory, " +
        "reached through a `MessageChannel`), but an error its tasks' code throws outside " +
        "their tasks (from a timer of their own) reaches the process, as in `single-loop` mode, " +
        "instead of ending a thread. With one slot, no worker thread is started: the task " +
        "manager costs about what a `single-loop` one does. Ignored in `single-loop` mode.",
    ),

  /** The young generation of each slot thread's heap. */
  TASK_SLOTS_YOUNG_GENERATION_SIZE: ConfigOptions.key(
    "taskmanager.task-slots.young-generation-size",
  )
    .memoryType()
    .defaultValue("8mb")
    .withValidator((bytes) =>
      bytes >= 1024 * 1024 ? undefined : "at least 1mb (it is given to V8 in whole MiB)",
    )
    .withDescription(
      "With `taskmanager.task-slots.mode: threaded`: the most memory the young generation of " +
        "each slot thread's heap may take (the thread's `resourceLimits.maxYoungGenerationSizeMb`, " +
        "whole MiB). Each slot thread is a V8 isolate of its own, whose young generation grows " +
        "to V8's default (48 MiB on 64-bit) when its tasks allocate quickly, and the memory its " +
        "short-lived records hold outside the heap waits for the next minor collection: with V8's " +
        "default, two slot threads of a keyed job took 30 MiB more than with 8mb, at the same " +
        "CPU time per record (docs/benchmarks.md, case 13). Larger values suit tasks that keep " +
        "many objects for a short while. The main thread keeps the process's own setting.",
    ),

  /** The worker's total memory budget, the base of the network memory fraction. */
  TOTAL_FLINK_MEMORY: ConfigOptions.key("taskmanager.memory.flink.size")
    .memoryType()
    .noDefaultValue()
    .withDescription(
      "Total memory budget of a worker. The network memory is " +
        "`taskmanager.memory.network.fraction` of it, clamped to " +
        "[`taskmanager.memory.network.min`, `taskmanager.memory.network.max`]. Unset (and no " +
        "total memory given to `TaskExecutor.start`): the network memory is " +
        "`taskmanager.memory.network.min`.",
    ),

  /** How long a canceled task's code may take to return (Flink's task cancellation watchdog). */
  TASK_CANCELLATION_TIMEOUT: ConfigOptions.key("task.cancellation.timeout")
    .durationType()
    .defaultValue("180s")
    .withDescription(
      "How long a task's code has to return once the task was canceled or failed from " +
        "outside (its `task.signal` aborted; its partitions and gates are released at once). " +
        "A task that did not end by then fails its TaskExecutor fatally, as in Flink: a task " +
        "manager ends and its process exits (the job side sees it lost). A TaskExecutor " +
        "without a fatal-error handler (embedded in an application's process) gives the task " +
        "up instead: it ends CANCELED and its job can end. Also bounds " +
        "`TaskExecutor.close()`. 0 turns the watchdog off and waits without bound.",
    ),

  /** How long a task manager that lost its job manager tries to register again. */
  REGISTRATION_TIMEOUT: ConfigOptions.key("taskmanager.registration.timeout")
    .durationType()
    .defaultValue("5min")
    .withValidator((value) => (value > 0 ? undefined : "a positive duration"))
    .withDescription(
      "How long a task manager that lost its job manager (its connection closed, or no " +
        "heartbeat request came within `heartbeat.timeout`) keeps trying to register again, " +
        "with or without high availability, as Flink's does: it cancels its tasks, releases " +
        "their partitions and keeps its process, network memory and data port meanwhile. A " +
        "task manager that could not register again within it ends (`job-manager-lost`).",
    ),

  /** The first pause between two registration attempts. */
  INITIAL_REGISTRATION_BACKOFF: ConfigOptions.key("taskmanager.registration.initial-backoff")
    .durationType()
    .defaultValue("500ms")
    .withValidator((value) => (value > 0 ? undefined : "a positive duration"))
    .withDescription(
      "The pause after a failed attempt of a task manager to register again with its job " +
        "manager; it doubles with every further failed attempt up to " +
        "`taskmanager.registration.max-backoff`.",
    ),

  /** The longest pause between two registration attempts. */
  REGISTRATION_MAX_BACKOFF: ConfigOptions.key("taskmanager.registration.max-backoff")
    .durationType()
    .defaultValue("30s")
    .withValidator((value) => (value > 0 ? undefined : "a positive duration"))
    .withDescription(
      "The longest pause between two attempts of a task manager to register again; also the " +
        "longest one attempt waits for the job manager to answer.",
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
