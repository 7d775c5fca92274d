import {
  ConfigurationError,
  type ExecutionAttemptID,
  IllegalStateError,
  type JobID,
  PartitionNotFoundError,
  ResourceID,
  type ResultPartitionID,
  SharedNetworkMemory,
  ThreadDoorbell,
} from "@sluice/core";
import {
  ExecutionOptions,
  type ExecutionState,
  type InputGate,
  type JsonValue,
  NetworkMemoryOptions,
  type PartitionInfo,
  type PartitionProducerStateProvider,
  type ResultPartitionWriter,
  type ShuffleEnvironment,
  type TaskEventPublisher,
  TaskManagerOptions,
  type TaskSlotThreadsContext,
} from "@sluice/runtime-api";
import { FsCheckpointStorage } from "../checkpointing/fs-checkpoint-storage.js";
import { Configuration } from "../config/configuration.js";
import type { RecordReaderOptions } from "../io/record-reader.js";
import {
  readRecordReaderConfiguration,
  readTmpDirectories,
} from "../io/record-reader-configuration.js";
import { bufferTimeoutOf } from "../io/record-writer.js";
import { checkInputGates, checkResultPartitionWriters } from "../loader/plugin-contract.js";
import type { PluginLoaderOptions } from "../loader/plugin-loader.js";
import {
  type LoadedShuffleServiceFactory,
  type LoaderConfiguration,
  loadShuffleServiceFactoryWithInfo,
  type ShuffleServiceLoaderOptions,
} from "../loader/shuffle-service-loader.js";
import type { CheckpointTriggerOptions } from "../messages/checkpoint-trigger-options.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import {
  type TaskDeploymentDescriptor,
  TaskDeploymentDescriptorCodec,
  taskNameWithSubtask,
} from "../messages/task-deployment-descriptor.js";
import type { TaskExecutionState } from "../messages/task-execution-state.js";
import type {
  TaskExecutorGateway,
  TaskManagerLocation,
} from "../messages/task-executor-gateway.js";
import type { UserCodeNames } from "../messages/user-code-names.js";
import { GroupMetricSink } from "../metrics/group-metric-sink.js";
import { TaskManagerMetricGroup } from "../metrics/groups/task-manager-metric-group.js";
import type { TaskMetricGroup } from "../metrics/groups/task-metric-group.js";
import type { MetricDump } from "../metrics/metric-dump.js";
import { MetricNames } from "../metrics/metric-names.js";
import { MetricRegistry } from "../metrics/metric-registry.js";
import { TaskDeploymentError, TaskNotFoundError } from "./errors.js";
import { LibraryCacheManager } from "./library-cache-manager.js";
import { deriveNetworkMemorySize, type NetworkMemorySize } from "./network-memory.js";
import type { RunningTask } from "./running-task.js";
import { Task } from "./task.js";
import { TaskCancelerWatchDog } from "./task-canceler-watch-dog.js";
import { createTaskCheckpointing, readTaskRestore } from "./task-checkpointing.js";
import { TaskExecutorPartitionTracker } from "./task-executor-partition-tracker.js";
import {
  type StartedShuffleEnvironment,
  startTaskManagerShuffleEnvironment,
} from "./task-manager-shuffle-environment.js";
import type { TaskInput, TaskOutput } from "./task-resources.js";
import type { TaskSlotThreadInit } from "./task-slot-messages.js";
import { TaskSlotTable } from "./task-slot-table.js";
import { TaskSlotsShuffleEnvironment } from "./task-slots-shuffle-environment.js";
import { type UserCode, UserCodeRegistry } from "./user-code-registry.js";

/** Options of {@link TaskExecutor.start}: the worker's identity, resources and code. */
export interface TaskExecutorOptions extends UserCode<Task> {
  /** The worker's resource id (default: a new random one). */
  readonly resourceId?: ResourceID;
  /**
   * The worker's total memory budget in bytes, the base of `taskmanager.memory.network.fraction`
   * (default: `taskmanager.memory.flink.size`; with neither, the network memory is
   * `taskmanager.memory.network.min`).
   */
  readonly totalMemory?: number;
  /** True when every task of the job runs in this process: the plugin starts no data server. */
  readonly localCommunicationOnly?: boolean;
  /** Where the loader resolves `shuffle-service-factory.class` from. */
  readonly loader?: ShuffleServiceLoaderOptions;
  /**
   * Where the job modules that task deployment descriptors name (`userCodeModule`) are resolved
   * from: a task manager's own folders of user code (Flink's `usrlib/`). Default: `loader`'s
   * folders.
   */
  readonly userCodeLoader?: PluginLoaderOptions;
  /**
   * The worker's metric group. Default: a `TaskManagerMetricGroup` on a new `MetricRegistry` with
   * the reporters the configuration sets (`metrics.reporter.<name>.*`), which the TaskExecutor
   * closes with itself. A group passed here stays open: its owner closes it and its registry.
   */
  readonly metricGroup?: TaskManagerMetricGroup;
  /** Receives task events that consumers send upstream (default: the plugin's own dispatcher). */
  readonly taskEventPublisher?: TaskEventPublisher;
  /**
   * Flink's fatal-error handler: told when the TaskExecutor cannot go on safely, i.e. a task
   * canceled (or failed from outside) did not end within `task.cancellation.timeout` (its code
   * ignores `task.signal`). The task is given up first (it ends CANCELED, its resources
   * released), but its code may still run: a task manager process ends here, as Flink's does.
   * Without a handler (a TaskExecutor embedded in an application's process) the task is only
   * given up, with a warning.
   */
  readonly onFatalError?: (error: Error) => void;
  /**
   * A job module (`<module>#<export>`, resolved as job modules are, from `userCodeLoader`'s
   * folders) whose `userCode` this TaskExecutor runs for tasks whose descriptor names no job
   * module, instead of code given here directly. Slot threads
   * (`taskmanager.task-slots.mode: threaded`) can only run code loaded by reference: there it is
   * the way to give them the application's code.
   */
  readonly userCodeModule?: string;
}

/** What the TaskExecutor of one slot thread is started with (the runtime's own use). */
export interface TaskSlotExecutorSpec {
  /** The slot thread's part of the task manager's threads, for its shuffle environment. */
  readonly threads: TaskSlotThreadsContext;
  /** The task manager's data port (its main thread's data server): where the slot is reached. */
  readonly dataPort: number;
  /** The task manager's network memory, which the slot's environment shares. */
  readonly networkMemoryBytes: number;
}

/**
 * The answer of a TaskExecutor that has no job master to ask: the state of a producer that runs
 * here, and RUNNING for any other, so that a consumer keeps asking (a remote channel until the
 * server's waits add up to twice `taskmanager.network.request-backoff.max`, a local one with its
 * backoff up to that maximum) while the producer may still be coming up.
 */
const ASSUME_RUNNING: ExecutionState = "RUNNING";

/** The `type` of the warnings a TaskExecutor emits through `process.emitWarning`. */
export const TASK_WARNING_TYPE = "SluiceTaskWarning";

/**
 * A worker process's task runtime (Flink's `TaskExecutor` with the shuffle part of its
 * `TaskManagerServices`). {@link TaskExecutor.start} loads the configured shuffle plugin through
 * the `ShuffleServiceLoader`, derives the network memory from Flink's keys, builds the
 * `ShuffleEnvironmentContext`, and starts the environment (its data server).
 * {@link TaskExecutor.deployTask} turns a task deployment descriptor into a {@link Task}: it
 * creates and sets up the task's writers and gates through the plugin, requests its partitions,
 * and resolves the descriptor's serializer, partitioner and invokable names against the code the
 * application registered. {@link TaskExecutor.close} cancels every task and closes the
 * environment; afterwards every network buffer is back in its pool.
 *
 * It is also the in-process {@link TaskExecutorGateway} the job side deploys through.
 */
export class TaskExecutor implements TaskExecutorGateway {
  /** The configuration the worker was started with. */
  readonly configuration: LoaderConfiguration;
  /** The worker's resource id. */
  readonly resourceId: ResourceID;
  /** Where the worker runs and its data port. */
  readonly location: TaskManagerLocation;
  /** How large the network memory is and why. */
  readonly networkMemory: NetworkMemorySize;
  /** The loaded shuffle plugin. */
  readonly plugin: LoadedShuffleServiceFactory;
  /** The plugin's environment (one per worker). */
  readonly shuffleEnvironment: ShuffleEnvironment;
  /** Where the tasks' snapshots go: `state.checkpoints.dir` (or its default). */
  readonly checkpointsDirectory: string;
  /**
   * The worker's metrics (scope `metrics.scope.tm`): the environment's `Status.Shuffle.Netty.*`,
   * and below it a group per job and task. `metricGroup.registry.dump()` reads them all.
   */
  readonly metricGroup: TaskManagerMetricGroup;

  /**
   * The partitions this worker holds for the scheduler to release (BLOCKING and the like): they
   * outlive their producing tasks until the job side releases them or the job is released here.
   */
  readonly partitionTracker: TaskExecutorPartitionTracker;

  private readonly userCode: UserCodeRegistry<Task>;
  /** The slots' threads, when the slots run on worker threads; else the tasks run here. */
  private readonly slots: TaskSlotTable | undefined;
  /** The user code of jobs that name a job module, loaded on first use. */
  private readonly libraries: LibraryCacheManager;
  private readonly tasks = new Map<string, Task>();
  /** The user code each running task resolved its names against, by attempt. */
  private readonly taskCode = new Map<string, UserCodeRegistry<Task>>();
  private readonly cancellationTimeoutMs: number;
  private readonly onFatalError: ((error: Error) => void) | undefined;
  private readonly watchDog: TaskCancelerWatchDog;
  /** The spilling threshold, max record size and spill folders of every task's readers. */
  private readonly readerOptions: RecordReaderOptions;
  private readonly ownsMetrics: boolean;
  private closing: Promise<void> | undefined;

  private constructor(parts: {
    readonly configuration: LoaderConfiguration;
    readonly options: TaskExecutorOptions;
    readonly plugin: LoadedShuffleServiceFactory;
    readonly environment: ShuffleEnvironment;
    readonly metricGroup: TaskManagerMetricGroup;
    readonly resourceId: ResourceID;
    readonly networkMemory: NetworkMemorySize;
    readonly dataPort: number;
    readonly readerOptions: RecordReaderOptions;
    readonly userCode: UserCodeRegistry<Task>;
    readonly slots: TaskSlotTable | undefined;
  }) {
    const { configuration, options, resourceId } = parts;
    this.configuration = configuration;
    this.plugin = parts.plugin;
    this.shuffleEnvironment = parts.environment;
    this.partitionTracker = new TaskExecutorPartitionTracker(parts.environment);
    this.metricGroup = parts.metricGroup;
    this.ownsMetrics = options.metricGroup === undefined;
    this.resourceId = resourceId;
    this.networkMemory = parts.networkMemory;
    this.readerOptions = parts.readerOptions;
    this.location = Object.freeze({
      resourceId,
      host: configuration.get(TaskManagerOptions.HOST),
      dataPort: parts.dataPort,
    });
    this.userCode = parts.userCode;
    this.slots = parts.slots;
    this.libraries = new LibraryCacheManager(options.userCodeLoader ?? options.loader ?? {});
    this.cancellationTimeoutMs = configuration.get(TaskManagerOptions.TASK_CANCELLATION_TIMEOUT);
    this.onFatalError = options.onFatalError;
    this.watchDog = new TaskCancelerWatchDog(this.cancellationTimeoutMs, (task, error) => {
      task.abandon();
      this.fatalError(error);
    });
    this.checkpointsDirectory = FsCheckpointStorage.baseDirectoryOf(configuration);
  }

  /**
   * Starts a TaskExecutor: loads the shuffle plugin named by `shuffle-service-factory.class`,
   * creates the worker's metric group (and its reporters, each loaded by class name) unless one
   * is given, creates the environment with the derived network memory and the metric group's
   * sink, and starts it.
   *
   * @throws the loader's errors (`SLUICE_ERR_PLUGIN_*`), ConfigurationError for inconsistent
   *   memory keys or a data port that cannot be listened on (in use: it names the address and
   *   `taskmanager.data.port`, or `taskmanager.data.bind-port`), PluginContractError when the
   *   plugin breaks the SPI, MetricReporterError when a reporter cannot open, or the
   *   environment's own start-up error (the environment and the reporters are closed again).
   */
  static async start(
    configuration: LoaderConfiguration,
    options: TaskExecutorOptions = {},
  ): Promise<TaskExecutor> {
    if (configuration.get(TaskManagerOptions.TASK_SLOTS_MODE) === "threaded") {
      return TaskExecutor.startWithSlotThreads(configuration, options);
    }
    return TaskExecutor.create(configuration, options, undefined);
  }

  /**
   * Starts the TaskExecutor of one slot thread of a task manager (the runtime's slot thread calls
   * it): its shuffle environment serves that thread, over the task manager's shared memory.
   *
   * @internal
   */
  static startInSlotThread(
    configuration: LoaderConfiguration,
    options: TaskExecutorOptions,
    slot: TaskSlotExecutorSpec,
  ): Promise<TaskExecutor> {
    return TaskExecutor.create(configuration, options, slot);
  }

  private static async create(
    configuration: LoaderConfiguration,
    options: TaskExecutorOptions,
    slot: TaskSlotExecutorSpec | undefined,
  ): Promise<TaskExecutor> {
    const networkMemory: NetworkMemorySize =
      slot === undefined
        ? deriveNetworkMemorySize(configuration, options.totalMemory)
        : {
            bytes: slot.networkMemoryBytes,
            derivation: "the task manager's shared network memory",
          };
    const plugin = await loadShuffleServiceFactoryWithInfo(configuration, options.loader);
    const userCode = await userCodeOfOptions(options);
    const resourceId = options.resourceId ?? new ResourceID();
    const host = configuration.get(TaskManagerOptions.HOST);
    const tmpDirPaths = readTmpDirectories(configuration);
    // Read at start-up, so that a bad spilling threshold refuses to start the worker.
    const readerOptions = readRecordReaderConfiguration(configuration, tmpDirPaths);
    const metricGroup =
      options.metricGroup ??
      new TaskManagerMetricGroup(
        await MetricRegistry.fromConfiguration(configuration, {
          ...(options.loader === undefined ? {} : { loader: options.loader }),
        }),
        host,
        resourceId.toString(),
      );
    // Every plugin is loaded: the keys none of them (nor Sluice) knows can be reported now.
    configuration.reportUnknownKeys?.();
    const closeMetrics = async () => {
      if (options.metricGroup !== undefined) return;
      metricGroup.close();
      await metricGroup.registry.close();
    };
    let started: StartedShuffleEnvironment;
    try {
      started = await startTaskManagerShuffleEnvironment({
        configuration,
        plugin,
        resourceId,
        networkMemorySize: networkMemory.bytes,
        localCommunicationOnly: options.localCommunicationOnly ?? false,
        tmpDirPaths,
        taskEventPublisher: options.taskEventPublisher,
        metricGroup,
        ...(slot === undefined ? {} : { taskSlotThreads: slot.threads }),
      });
    } catch (error) {
      await closeMetrics();
      throw error;
    }
    return new TaskExecutor({
      configuration,
      options,
      plugin,
      environment: started.environment,
      metricGroup,
      resourceId,
      networkMemory,
      dataPort: slot?.dataPort ?? started.dataPort,
      readerOptions,
      userCode,
      slots: undefined,
    });
  }

  /**
   * `taskmanager.task-slots.mode: threaded`: the network memory in shared memory, the main
   * thread's environment (the data server for every slot, no task), and a thread per slot, each
   * with its own TaskExecutor and environment over the same memory. Tasks run on the slots. With
   * `taskmanager.task-slots.main-thread-slot`, slot 0's TaskExecutor runs on this thread instead,
   * beside this one (a second environment, role `slot`, over the same memory).
   */
  private static async startWithSlotThreads(
    configuration: LoaderConfiguration,
    options: TaskExecutorOptions,
  ): Promise<TaskExecutor> {
    const mode = TaskManagerOptions.TASK_SLOTS_MODE.key;
    if (!(configuration instanceof Configuration)) {
      throw new ConfigurationError(
        `'${mode}: threaded' needs a Configuration (its entries go to the slot threads)`,
      );
    }
    if (options.taskEventPublisher !== undefined || options.metricGroup !== undefined) {
      throw new ConfigurationError(
        `'${mode}: threaded' takes no taskEventPublisher or metricGroup: the slot threads have their own`,
      );
    }
    if (options.userCodeModule === undefined && hasInlineUserCode(options)) {
      throw new ConfigurationError(
        `'${mode}: threaded': the slot threads cannot run code given to TaskExecutor.start directly (invokables, serializers, ...); name a job module with the userCodeModule option, or deploy jobs that name their job module`,
      );
    }
    const networkMemory = deriveNetworkMemorySize(configuration, options.totalMemory);
    const plugin = await loadShuffleServiceFactoryWithInfo(configuration, options.loader);
    if (plugin.factory.supportsTaskSlotThreads !== true) {
      throw new ConfigurationError(
        `'${mode}: threaded' needs a shuffle plugin that supports slot threads, but ${plugin.value} (${plugin.file}) does not (its factory's supportsTaskSlotThreads is not true); use tcp or ws, or '${mode}: single-loop'`,
      );
    }
    const userCode = await userCodeOfOptions(options);
    const resourceId = options.resourceId ?? new ResourceID();
    const host = configuration.get(TaskManagerOptions.HOST);
    const tmpDirPaths = readTmpDirectories(configuration);
    const readerOptions = readRecordReaderConfiguration(configuration, tmpDirPaths);
    const numberOfSlots = configuration.get(TaskManagerOptions.NUM_TASK_SLOTS);
    const segmentSize = configuration.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE);
    const memory = SharedNetworkMemory.create(
      Math.floor(networkMemory.bytes / segmentSize),
      segmentSize,
      numberOfSlots + 1,
    );
    const signals = ThreadDoorbell.createSignals(numberOfSlots + 1);
    const youngGeneration = configuration.get(TaskManagerOptions.TASK_SLOTS_YOUNG_GENERATION_SIZE);
    const metricGroup = new TaskManagerMetricGroup(
      await MetricRegistry.fromConfiguration(configuration, {
        ...(options.loader === undefined ? {} : { loader: options.loader }),
      }),
      host,
      resourceId.toString(),
    );
    // Every plugin is loaded: the keys none of them (nor Sluice) knows can be reported now.
    configuration.reportUnknownKeys?.();
    // The main thread's environment is told about the slots once their table exists: until then
    // its data server has no partition to serve (a consumer that asks that early retries).
    let table: TaskSlotTable | undefined;
    let executor: TaskExecutor | undefined;
    const lostListeners: ((threadIndex: number, cause: Error) => void)[] = [];
    const networkThread: TaskSlotThreadsContext = {
      role: "network",
      threadIndex: 0,
      sharedMemory: memory.handle,
      signals,
      requestSubpartition: (request) =>
        table === undefined
          ? Promise.reject(
              new PartitionNotFoundError(
                `${request.partitionId}: the task manager's slots are still starting`,
              ),
            )
          : table.requestSubpartition(request, 0),
      serveSubpartitionRequests: () => {},
      onThreadLost: (listener) => {
        lostListeners.push(listener);
      },
    };
    let started: StartedShuffleEnvironment | undefined;
    try {
      started = await startTaskManagerShuffleEnvironment({
        configuration,
        plugin,
        resourceId,
        networkMemorySize: networkMemory.bytes,
        localCommunicationOnly: options.localCommunicationOnly ?? false,
        tmpDirPaths,
        taskEventPublisher: undefined,
        metricGroup,
        taskSlotThreads: networkThread,
      });
      const dataPort = started.dataPort;
      const init = (slotIndex: number): TaskSlotThreadInit => ({
        slotIndex,
        threadIndex: slotIndex + 1,
        configuration: configuration.toObject(),
        ...(configuration.configDir === undefined ? {} : { configDir: configuration.configDir }),
        resourceId: resourceId.toString(),
        dataPort,
        networkMemoryBytes: networkMemory.bytes,
        localCommunicationOnly: options.localCommunicationOnly ?? false,
        sharedMemory: memory.handle,
        signals,
        ...(options.loader === undefined ? {} : { loader: options.loader }),
        ...(options.userCodeLoader === undefined ? {} : { userCodeLoader: options.userCodeLoader }),
        ...(options.userCodeModule === undefined ? {} : { userCodeModule: options.userCodeModule }),
        youngGenerationSizeMb: Math.floor(youngGeneration / (1024 * 1024)),
      });
      table = await TaskSlotTable.start({
        numberOfSlots,
        init,
        mainThreadSlot: configuration.get(TaskManagerOptions.TASK_SLOTS_MAIN_THREAD_SLOT),
        memory,
        // A slot's stuck task is the task manager's, as on one event loop.
        onFatalError: (error) => executor?.fatalError(error),
        onThreadLost: (threadIndex, cause) => {
          for (const listener of lostListeners) listener(threadIndex, cause);
        },
      });
    } catch (error) {
      await started?.environment.close();
      metricGroup.close();
      await metricGroup.registry.close();
      throw error;
    }
    executor = new TaskExecutor({
      configuration,
      options,
      plugin,
      environment: new TaskSlotsShuffleEnvironment(started.environment, table),
      metricGroup,
      resourceId,
      networkMemory,
      dataPort: started.dataPort,
      readerOptions,
      userCode,
      slots: table,
    });
    return executor;
  }

  /**
   * Hands an error after which this TaskExecutor cannot go on safely to `onFatalError`, or, without
   * one or while closing, emits it as a warning (the task it concerns is given up already).
   */
  private fatalError(error: Error): void {
    if (this.onFatalError === undefined || this.closing !== undefined) {
      const code: unknown = (error as { code?: unknown }).code;
      process.emitWarning(`${error.message}; it was given up`, {
        type: TASK_WARNING_TYPE,
        ...(typeof code === "string" ? { code } : {}),
      });
    } else {
      this.onFatalError(error);
    }
  }

  /**
   * The tasks deployed here that have not ended yet: on this event loop, or on the slot threads
   * (`taskmanager.task-slots.mode: threaded`).
   */
  get runningTasks(): readonly RunningTask[] {
    return this.slots?.runningTasks ?? [...this.tasks.values()];
  }

  /**
   * The task of an execution attempt on this event loop, while it has not ended (never one of a
   * slot thread: those are only in {@link runningTasks}).
   */
  getTask(executionAttemptId: ExecutionAttemptID): Task | undefined {
    return this.tasks.get(executionAttemptId.toString());
  }

  /** The task slots: `taskmanager.numberOfTaskSlots`, which the job side places subtasks on. */
  get numberOfSlots(): number {
    return this.slots?.numberOfSlots ?? this.configuration.get(TaskManagerOptions.NUM_TASK_SLOTS);
  }

  /**
   * Every metric of the worker with its value: this registry's, and, with slot threads, those of
   * every slot (where the tasks' metrics are).
   */
  async dumpMetrics(): Promise<MetricDump[]> {
    const own = this.metricGroup.registry.dump();
    return this.slots === undefined ? own : [...own, ...(await this.slots.dumpMetrics())];
  }

  /**
   * Deploys a task (Flink's `submitTask` up to `setupPartitionsAndGates`): creates its writers and
   * gates through the shuffle environment, sets them up, requests its partitions and returns the
   * task INITIALIZING. Nothing is left behind when it fails.
   *
   * @param descriptor - the decoded descriptor, or its JSON form (as received from another process).
   * @param jobMaster - where state changes go and producer states are asked; default: nowhere,
   *   and producers not running here are assumed RUNNING.
   * @throws DescriptorError (`SLUICE_ERR_DESCRIPTOR`) naming the bad field; TaskDeploymentError
   *   for unknown names; InsufficientBuffersError when the network memory is too small for the
   *   task; PluginContractError when the plugin returns malformed writers or gates.
   */
  async deployTask(
    descriptor: TaskDeploymentDescriptor | unknown,
    jobMaster?: JobMasterGateway,
  ): Promise<Task> {
    this.checkOpen();
    if (this.slots !== undefined) {
      throw new IllegalStateError(
        `TaskExecutor ${this.resourceId} runs its tasks on slot threads ('${TaskManagerOptions.TASK_SLOTS_MODE.key}: threaded'): deployTask would return a Task of this thread; use submitTask`,
      );
    }
    const tdd = decodeDescriptor(descriptor);
    const key = tdd.executionAttemptId.toString();
    const name = taskNameWithSubtask(tdd);
    if (this.tasks.has(key)) {
      throw new IllegalStateError(
        `${name}: attempt ${key} is already deployed on this TaskExecutor`,
      );
    }
    // Resolve every name before anything is allocated, so a bad name leaves nothing behind.
    // No await for the code the TaskExecutor was started with: a deployment takes as few turns as
    // it did before job modules, so the job side's serializer check of a producer that deploys
    // right after its consumer still comes before the consumer's code runs.
    const userCode =
      tdd.userCodeModule === undefined
        ? this.userCode
        : await this.userCodeOf(tdd.userCodeModule, name);
    this.checkOpen();
    const serializersOut = tdd.producedPartitions.map((produced, i) =>
      userCode.serializer(produced.serializer, name, `producedPartitions[${i}].serializer`),
    );
    const selectors = tdd.producedPartitions.map((produced, i) =>
      userCode.channelSelector(
        produced.partitioner,
        produced.deployment.maxParallelism,
        name,
        `producedPartitions[${i}].partitioner`,
      ),
    );
    const serializersIn = tdd.inputGates.map((gate, i) =>
      userCode.serializer(gate.serializer, name, `inputGates[${i}].serializer`),
    );
    if (tdd.invokable !== undefined) userCode.invokable(tdd.invokable, name);
    if (
      tdd.checkpointingMode !== undefined &&
      jobMaster !== undefined &&
      (jobMaster.acknowledgeCheckpoint === undefined || jobMaster.declineCheckpoint === undefined)
    ) {
      throw new TaskDeploymentError(
        `${name}: the job takes checkpoints, but the JobMasterGateway it reports to does not forward acknowledgeCheckpoint and declineCheckpoint`,
      );
    }
    // Read before anything is allocated: a missing or foreign snapshot leaves nothing behind.
    const restore = await readTaskRestore(tdd, name);
    this.checkOpen();

    const environment = this.shuffleEnvironment;
    const metricGroup = this.addTaskMetricGroup(tdd);
    const owner = environment.createShuffleIOOwnerContext(
      name,
      tdd.executionAttemptId,
      new GroupMetricSink(metricGroup),
    );
    const writers: ResultPartitionWriter[] = [];
    const gates: InputGate[] = [];
    try {
      writers.push(
        ...checkResultPartitionWriters(
          this.plugin,
          environment.createResultPartitionWriters(
            owner,
            tdd.producedPartitions.map((produced) => produced.deployment),
          ),
          tdd.producedPartitions.length,
        ),
      );
      gates.push(
        ...checkInputGates(
          this.plugin,
          environment.createInputGates(
            owner,
            this.producerStateProvider(tdd.jobId, jobMaster),
            tdd.inputGates.map((gate) => gate.deployment),
          ),
          tdd.inputGates.length,
        ),
      );
      for (const writer of writers) writer.setup();
      for (const gate of gates) gate.setup();
      for (const gate of gates) gate.requestPartitions();
    } catch (error) {
      for (const writer of writers) {
        writer.release(error instanceof Error ? error : undefined);
        writer.close();
      }
      await Promise.all(gates.map((gate) => gate.close()));
      metricGroup.close();
      throw error;
    }
    // Flink's isBackPressured: an output of the task does not accept data right now.
    metricGroup.gauge(MetricNames.IS_BACK_PRESSURED, () =>
      writers.some((writer) => !writer.isAvailable() && !writer.isReleased()) ? 1 : 0,
    );

    const outputs: TaskOutput[] = writers.map((partition, i) => ({
      partition,
      serializer: serializersOut[i] as TaskOutput["serializer"],
      selector: selectors[i] as TaskOutput["selector"],
    }));
    const inputs: TaskInput[] = gates.map((gate, i) => ({
      gate,
      serializer: serializersIn[i] as TaskInput["serializer"],
    }));
    const task = new Task({
      descriptor: tdd,
      outputs,
      inputs,
      bufferTimeout: bufferTimeoutOf(
        this.configuration.get(ExecutionOptions.BUFFER_TIMEOUT_ENABLED),
        this.configuration.get(ExecutionOptions.BUFFER_TIMEOUT_INTERVAL),
      ),
      readerOptions: this.readerOptions,
      metricGroup,
      onStateChange: (update) => this.onTaskStateChange(update, jobMaster),
      ...(tdd.checkpointingMode === undefined
        ? {}
        : {
            checkpointing: createTaskCheckpointing(tdd, name, this.checkpointsDirectory, jobMaster),
          }),
      ...(restore === undefined ? {} : { restore }),
      ...(this.configuration.get(NetworkMemoryOptions.BUFFER_DEBLOAT_ENABLED)
        ? {
            bufferDebloatPeriodMs: this.configuration.get(
              NetworkMemoryOptions.BUFFER_DEBLOAT_PERIOD,
            ),
          }
        : {}),
    });
    this.tasks.set(key, task);
    this.taskCode.set(key, userCode);
    this.watchDog.watch(task);
    const tracked = this.trackPartitions(tdd);
    void task.terminated.then((end) => {
      this.tasks.delete(key);
      this.taskCode.delete(key);
      // A producer that did not finish released its partitions itself (Flink forgets them too).
      if (end.state !== "FINISHED") this.partitionTracker.stopTrackingPartitions(tracked);
      // A task's metrics leave the reporters when it ends, as in Flink.
      metricGroup.close();
    });
    return task;
  }

  /**
   * The names this TaskExecutor resolves for job module `reference` (loading it from this host if
   * needed), or, without one, for the code it was started with: what the job side checks a job
   * graph against before it deploys.
   *
   * @throws the loader's errors (`SLUICE_ERR_PLUGIN_*`) when the module cannot be loaded here.
   */
  async userCodeNames(reference?: string): Promise<UserCodeNames> {
    return reference === undefined ? this.userCode.names() : this.libraries.namesOf(reference);
  }

  /**
   * The code of a descriptor's job module, loaded on first use.
   *
   * @throws TaskDeploymentError naming the task and the module when the module cannot be loaded.
   */
  private async userCodeOf(reference: string, name: string): Promise<UserCodeRegistry<Task>> {
    try {
      return await this.libraries.registryOf(reference);
    } catch (error) {
      throw new TaskDeploymentError(
        `${name}: the job's user code ${reference} cannot be loaded on the TaskExecutor at ${this.location.host}:${this.location.dataPort}: ${(error as Error)?.message ?? String(error)}`,
        { cause: error },
      );
    }
  }

  /** Starts tracking the task's partitions that the scheduler releases; returns their ids. */
  private trackPartitions(tdd: TaskDeploymentDescriptor): ResultPartitionID[] {
    const tracked: ResultPartitionID[] = [];
    for (const produced of tdd.producedPartitions) {
      if (!TaskExecutorPartitionTracker.requiresRelease(produced.deployment)) continue;
      const info = TaskExecutorPartitionTracker.infoOf(produced.deployment);
      this.partitionTracker.startTrackingPartition(tdd.jobId, info);
      tracked.push(info.partitionId);
    }
    return tracked;
  }

  /** The task's metric group, below the group of its job on this worker. */
  private addTaskMetricGroup(tdd: TaskDeploymentDescriptor): TaskMetricGroup {
    const jobId = tdd.jobId.toString();
    const attempt = tdd.executionAttemptId;
    return this.metricGroup.addJob(jobId, tdd.jobName ?? jobId).addTask({
      vertexId: attempt.jobVertexId.toString(),
      executionAttemptId: attempt.toString(),
      taskName: tdd.taskName,
      subtaskIndex: attempt.subtaskIndex,
      attemptNumber: attempt.attemptNumber,
    });
  }

  /**
   * Deploys a task and runs its invokable (the descriptor must name one). Resolves once the task
   * is deployed; its end is reported to `jobMaster` (FINISHED with the invokable's result, or
   * FAILED with the error).
   */
  async submitTask(
    descriptor: TaskDeploymentDescriptor,
    jobMaster: JobMasterGateway,
  ): Promise<void> {
    const tdd = decodeDescriptor(descriptor);
    const name = taskNameWithSubtask(tdd);
    if (tdd.invokable === undefined) {
      throw new IllegalStateError(
        `${name}: submitTask needs a descriptor that names its invokable; use deployTask to run the task yourself`,
      );
    }
    if (this.slots !== undefined) {
      this.checkOpen();
      await this.slots.submitTask(tdd, jobMaster);
      return;
    }
    const userCode =
      tdd.userCodeModule === undefined
        ? this.userCode
        : await this.userCodeOf(tdd.userCodeModule, name);
    const invokable = userCode.invokable(tdd.invokable, name);
    const task = await this.deployTask(tdd, jobMaster);
    // The failure is not lost: it reaches the job master in the task's FAILED state report.
    task.run(invokable).catch(() => {});
  }

  /** Cancels a task running here. */
  async cancelTask(executionAttemptId: ExecutionAttemptID): Promise<void> {
    if (this.slots !== undefined) return this.slots.cancelTask(executionAttemptId);
    this.requireTask(executionAttemptId).cancel();
  }

  /**
   * Replaces unknown input channels of a task once their producers are known (Flink's
   * `updatePartitions`), routed to the task's gates by the shuffle environment. A partition the
   * environment no longer knows (the task's gate is gone) fails the task.
   *
   * @throws TaskNotFoundError when no such task runs here.
   */
  async updatePartitions(
    executionAttemptId: ExecutionAttemptID,
    partitionInfos: readonly PartitionInfo[],
  ): Promise<void> {
    if (this.slots !== undefined) {
      return this.slots.updatePartitions(executionAttemptId, partitionInfos);
    }
    const task = this.requireTask(executionAttemptId);
    for (const info of partitionInfos) {
      const updated = this.shuffleEnvironment.updatePartitionInfo(executionAttemptId, info);
      if (!updated && task.state !== "FINISHED") {
        task.fail(
          new IllegalStateError(
            `${task.name}: no unknown input channel for partition ${info.shuffleDescriptor.resultPartitionId} of data set ${info.intermediateDataSetId} could be updated`,
          ),
        );
        return;
      }
    }
  }

  /**
   * Queues checkpoint `checkpointId` at a source task running here (see
   * `TaskExecutorGateway.triggerCheckpoint`).
   *
   * @throws TaskNotFoundError when no such task runs here; IllegalStateError when it is not a
   *   source or its job takes no checkpoints.
   */
  async triggerCheckpoint(
    executionAttemptId: ExecutionAttemptID,
    checkpointId: bigint,
    timestamp: bigint,
    options?: CheckpointTriggerOptions,
  ): Promise<void> {
    if (this.slots !== undefined) {
      return this.slots.checkpointCall(
        "triggerCheckpoint",
        executionAttemptId,
        checkpointId,
        timestamp,
        undefined,
        options,
      );
    }
    this.requireTask(executionAttemptId).triggerCheckpoint(checkpointId, timestamp, options);
  }

  /**
   * Tells a task running here that checkpoint `checkpointId` completed (see
   * `TaskExecutorGateway.notifyCheckpointComplete`).
   *
   * @throws TaskNotFoundError when no such task runs here; IllegalStateError when its job takes
   *   no checkpoints.
   */
  async notifyCheckpointComplete(
    executionAttemptId: ExecutionAttemptID,
    checkpointId: bigint,
    timestamp: bigint,
    lastSubsumedCheckpointId?: bigint,
  ): Promise<void> {
    if (this.slots !== undefined) {
      return this.slots.checkpointCall(
        "notifyCheckpointComplete",
        executionAttemptId,
        checkpointId,
        timestamp,
        lastSubsumedCheckpointId,
      );
    }
    const task = this.requireTask(executionAttemptId);
    task.notifyCheckpointComplete(checkpointId);
    // After the completion, as Flink's confirmCheckpoint: the newer one is committed first.
    if (lastSubsumedCheckpointId !== undefined && lastSubsumedCheckpointId > 0n) {
      task.notifyCheckpointSubsumed(lastSubsumedCheckpointId);
    }
  }

  /**
   * Tells a task running here that checkpoint `checkpointId` was aborted (see
   * `TaskExecutorGateway.notifyCheckpointAborted`).
   *
   * @throws TaskNotFoundError when no such task runs here; IllegalStateError when its job takes
   *   no checkpoints.
   */
  async notifyCheckpointAborted(
    executionAttemptId: ExecutionAttemptID,
    checkpointId: bigint,
    latestCompletedCheckpointId: bigint,
  ): Promise<void> {
    if (this.slots !== undefined) {
      return this.slots.checkpointCall(
        "notifyCheckpointAborted",
        executionAttemptId,
        checkpointId,
        latestCompletedCheckpointId,
      );
    }
    this.requireTask(executionAttemptId).notifyCheckpointAborted(
      checkpointId,
      latestCompletedCheckpointId,
    );
  }

  /**
   * Frees the local resources of these partitions (`releasePartitionsLocally`); the job side
   * calls it when the job ends. Files of blocking partitions are deleted in the background:
   * readers still on them fail first, and {@link close} waits for every deletion.
   */
  async releasePartitions(
    _jobId: JobID,
    partitionIds: readonly ResultPartitionID[],
  ): Promise<void> {
    if (this.slots !== undefined) return this.slots.releasePartitions(partitionIds);
    this.partitionTracker.stopTrackingAndReleaseJobPartitions(partitionIds);
  }

  /**
   * Delivers a job message to the handler the user code registered under `name`, in the context
   * of job `jobId`; resolves with its reply (`null` when it returns nothing). Only a job with a
   * task here gets messages: the handler is the job's code, and a message for another job must
   * not reach it.
   *
   * @throws IllegalStateError when no task of `jobId` runs here or the TaskExecutor is shut
   *   down; IllegalArgumentError when the code registered no such message; the handler's error.
   */
  async deliverJobMessage(jobId: JobID, name: string, payload: JsonValue): Promise<JsonValue> {
    this.checkOpen();
    // Each slot thread runs its own instance of the job's code: each that runs a task of the job
    // handles the message.
    if (this.slots !== undefined) return this.slots.deliverJobMessage(jobId, name, payload);
    // The job's own code handles it: its job module's, or the code this TaskExecutor started with.
    const [key] = [...this.tasks].find(([, task]) => task.jobId.equals(jobId)) ?? [];
    const code = key === undefined ? undefined : this.taskCode.get(key);
    if (code === undefined) {
      throw new IllegalStateError(
        `no task of job ${jobId} runs on the TaskExecutor at ${this.location.host}:${this.location.dataPort}: it cannot take the job's message "${name}"`,
      );
    }
    const reply = await code.messageHandler(name, jobId)(payload, { jobId });
    return reply ?? null;
  }

  /**
   * Releases every partition this worker holds for `jobId` (Flink's release of a job's
   * resources when its job master disconnects): the job ended, or its job master is gone and
   * no one will release them otherwise. BLOCKING_PERSISTENT partitions go too. Returns their ids.
   */
  async releaseJobPartitions(jobId: JobID): Promise<ResultPartitionID[]> {
    if (this.slots !== undefined) return this.slots.releaseJobPartitions(jobId);
    return this.partitionTracker.stopTrackingAndReleaseJobPartitionsFor(jobId);
  }

  /**
   * Cancels every task, waits for them to end (at most `task.cancellation.timeout`), then closes
   * the shuffle environment, which releases every partition and gate and frees the network
   * memory, and the metric reporters it started. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    // The slots first: their tasks, environments and threads; the main thread's data server last,
    // so what it still sends to other workers goes back to the slots' memory.
    await this.slots?.close(this.cancellationTimeoutMs);
    const tasks = [...this.tasks.values()];
    for (const task of tasks) task.cancel(`the TaskExecutor of ${task.name} is shutting down`);
    const ended = Promise.all(tasks.map((task) => task.terminated));
    if (this.cancellationTimeoutMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.cancellationTimeoutMs);
      });
      await Promise.race([ended, timeout]);
      clearTimeout(timer);
      // The watchdog, on the same timeout, gives them up too: whichever comes first.
      for (const task of tasks) task.abandon();
    } else {
      await ended;
    }
    await this.shuffleEnvironment.close();
    if (this.ownsMetrics) {
      this.metricGroup.close();
      await this.metricGroup.registry.close();
    }
  }

  private producerStateProvider(
    jobId: JobID,
    jobMaster: JobMasterGateway | undefined,
  ): PartitionProducerStateProvider {
    return {
      requestPartitionProducerState: async (resultId, partitionId) => {
        const local = this.tasks.get(partitionId.producerId.toString());
        if (local !== undefined) return local.state;
        if (jobMaster === undefined) return ASSUME_RUNNING;
        return jobMaster.requestPartitionProducerState(jobId, resultId, partitionId);
      },
    };
  }

  private onTaskStateChange(update: TaskExecutionState, jobMaster?: JobMasterGateway): void {
    jobMaster?.updateTaskExecutionState(update);
  }

  private requireTask(executionAttemptId: ExecutionAttemptID): Task {
    const task = this.tasks.get(executionAttemptId.toString());
    if (task === undefined) {
      throw new TaskNotFoundError(
        `no task with execution attempt ${executionAttemptId} runs on TaskExecutor ${this.resourceId}`,
      );
    }
    return task;
  }

  private checkOpen(): void {
    if (this.closing !== undefined) {
      throw new IllegalStateError(`TaskExecutor ${this.resourceId} is shut down`);
    }
  }
}

/**
 * The decoded descriptor, whether given decoded or as JSON (which has a `version`). A decoded one
 * is round-tripped through the codec too, so a hand-built descriptor with a wrong field fails here
 * with a DescriptorError naming the field, not deep in the plugin with a TypeError.
 */
function decodeDescriptor(descriptor: unknown): TaskDeploymentDescriptor {
  const codec = TaskDeploymentDescriptorCodec;
  if (typeof descriptor !== "object" || descriptor === null || "version" in descriptor) {
    return codec.fromJSON(descriptor);
  }
  return codec.fromJSON(codec.toJSON(descriptor as TaskDeploymentDescriptor));
}

/** True when `options` hands the TaskExecutor code directly (names of any kind). */
function hasInlineUserCode(options: TaskExecutorOptions): boolean {
  return [
    options.invokables,
    options.serializers,
    options.keySelectors,
    options.partitioners,
    options.messages,
  ].some((names) => names !== undefined && Object.keys(names).length > 0);
}

/**
 * The code a TaskExecutor runs for descriptors that name no job module: its `userCodeModule`'s,
 * loaded now (so a missing module refuses to start the worker), or the code given directly.
 */
async function userCodeOfOptions(options: TaskExecutorOptions): Promise<UserCodeRegistry<Task>> {
  if (options.userCodeModule === undefined) return new UserCodeRegistry(options);
  return new LibraryCacheManager(options.userCodeLoader ?? options.loader ?? {}).registryOf(
    options.userCodeModule,
  );
}
