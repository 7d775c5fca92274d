import {
  type ExecutionAttemptID,
  IllegalStateError,
  type JobID,
  ResourceID,
  type ResultPartitionID,
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
} from "@sluice/runtime-api";
import { FsCheckpointStorage } from "../checkpointing/fs-checkpoint-storage.js";
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
import { MetricNames } from "../metrics/metric-names.js";
import { MetricRegistry } from "../metrics/metric-registry.js";
import { TaskDeploymentError, TaskNotFoundError } from "./errors.js";
import { LibraryCacheManager } from "./library-cache-manager.js";
import { deriveNetworkMemorySize, type NetworkMemorySize } from "./network-memory.js";
import { Task } from "./task.js";
import { TaskCancelerWatchDog } from "./task-canceler-watch-dog.js";
import { createTaskCheckpointing, readTaskRestore } from "./task-checkpointing.js";
import { TaskExecutorPartitionTracker } from "./task-executor-partition-tracker.js";
import {
  type StartedShuffleEnvironment,
  startTaskManagerShuffleEnvironment,
} from "./task-manager-shuffle-environment.js";
import type { TaskInput, TaskOutput } from "./task-resources.js";
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
  /** The user code of jobs that name a job module, loaded on first use. */
  private readonly libraries: LibraryCacheManager;
  private readonly tasks = new Map<string, Task>();
  /** The user code each running task resolved its names against, by attempt. */
  private readonly taskCode = new Map<string, UserCodeRegistry<Task>>();
  private readonly cancellationTimeoutMs: number;
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
    this.userCode = new UserCodeRegistry(options);
    this.libraries = new LibraryCacheManager(options.userCodeLoader ?? options.loader ?? {});
    this.cancellationTimeoutMs = configuration.get(TaskManagerOptions.TASK_CANCELLATION_TIMEOUT);
    this.watchDog = new TaskCancelerWatchDog(this.cancellationTimeoutMs, (task, error) => {
      task.abandon();
      if (options.onFatalError === undefined || this.closing !== undefined) {
        process.emitWarning(`${error.message}; it was given up`, {
          type: TASK_WARNING_TYPE,
          code: error.code,
        });
      } else {
        options.onFatalError(error);
      }
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
    const networkMemory = deriveNetworkMemorySize(configuration, options.totalMemory);
    const plugin = await loadShuffleServiceFactoryWithInfo(configuration, options.loader);
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
      });
    } catch (error) {
      await closeMetrics();
      throw error;
    }
    const { environment, dataPort } = started;
    return new TaskExecutor({
      configuration,
      options,
      plugin,
      environment,
      metricGroup,
      resourceId,
      networkMemory,
      dataPort,
      readerOptions,
    });
  }

  /** The tasks deployed here that have not ended yet. */
  get runningTasks(): readonly Task[] {
    return [...this.tasks.values()];
  }

  /** The task of an execution attempt, while it has not ended. */
  getTask(executionAttemptId: ExecutionAttemptID): Task | undefined {
    return this.tasks.get(executionAttemptId.toString());
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
    _timestamp: bigint,
    lastSubsumedCheckpointId?: bigint,
  ): Promise<void> {
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
