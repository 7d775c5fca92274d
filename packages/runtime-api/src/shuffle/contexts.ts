import type {
  ExecutionAttemptID,
  IntermediateDataSetID,
  JobID,
  ResourceID,
  ResultPartitionID,
  TaskEvent,
} from "@sluice/core";
import type { ReadableConfig } from "../config/config-option.js";
import type { TaskSlotThreadsContext } from "./task-slot-threads.js";

/**
 * Where a plugin registers its metrics (Flink's `MetricGroup` as the shuffle sees it). The runtime
 * hands one to the environment (`ShuffleEnvironmentContext.metrics`, the worker's task-manager
 * scope) and one per task (`ShuffleIOOwnerContext.metrics`, the task's scope). The plugin
 * registers each metric once, at set-up, with a function that reads its own live state; the
 * runtime reads the functions whenever a reporter asks, so the plugin's hot paths pay nothing
 * beyond updating its own fields.
 *
 * Names are dot-separated: the part before the last dot is a chain of subgroups, the rest the
 * metric's name. `Shuffle.Netty.Input.Buffers.inPoolUsage` registers `inPoolUsage` in the group
 * `Shuffle` → `Netty` → `Input` → `Buffers` below the scope, which Flink's Prometheus reporter
 * names `flink_taskmanager_job_task_Shuffle_Netty_Input_Buffers_inPoolUsage`. Registering a name
 * twice keeps the first metric and emits a warning.
 */
export interface ShuffleMetricSink {
  /**
   * Registers a gauge (Flink's `Gauge`): a value read when it is reported, such as a pool usage or
   * a queue length. `read` must be cheap and must not throw.
   */
  registerGauge(name: string, read: () => number): void;

  /**
   * Registers a counter (Flink's `Counter`) whose count `read` returns, such as `numBytesOut`.
   * `read` must be cheap, must not throw, and should only grow.
   */
  registerCounter(name: string, read: () => number): void;

  /**
   * Registers a meter (Flink's `Meter` as a `MeterView`): the per-second rate of the count `read`
   * returns, averaged over Flink's 60 s window and updated every 5 s by the runtime. Flink
   * registers the count and its rate under two names (`numBytesOut` and `numBytesOutPerSecond`):
   * call {@link registerCounter} for the first and this for the second, with the same `read`.
   */
  registerMeter(name: string, read: () => number): void;
}

/**
 * Delivers task events that consumers send upstream (TaskEventRequest) to the producing task
 * (Flink's `TaskEventPublisher`). Provided by the worker; used by the plugin's server side.
 */
export interface TaskEventPublisher {
  /** Publishes `event` to the subscribers of `partitionId`; false when there is none. */
  publish(partitionId: ResultPartitionID, event: TaskEvent): boolean;
}

/**
 * What a worker gives `ShuffleServiceFactory.createShuffleEnvironment` (Flink's
 * `ShuffleEnvironmentContext`). Built once per worker process by the runtime's TaskExecutor.
 */
export interface ShuffleEnvironmentContext {
  /** The worker's configuration (config file + `-D` overrides). */
  readonly configuration: ReadableConfig;
  /** The worker's id; producers on this worker put it into their descriptors. */
  readonly taskExecutorResourceId: ResourceID;
  /**
   * Bytes of network memory the environment may use for its buffer pool (already derived from
   * `taskmanager.memory.network.*`).
   */
  readonly networkMemorySize: number;
  /** True when every task runs in this process: the environment needs no data server. */
  readonly localCommunicationOnly: boolean;
  /** The address other workers reach this worker at (`taskmanager.host`). */
  readonly hostAddress: string;
  /** Task slots of the worker (`taskmanager.numberOfTaskSlots`). */
  readonly numberOfSlots: number;
  /** Folders for temporary files (spilled records, blocking partitions); at least one. */
  readonly tmpDirPaths: readonly string[];
  /** Receives task events sent upstream by consumers; absent when the job uses none. */
  readonly taskEventPublisher?: TaskEventPublisher;
  /**
   * Where the environment registers its process-wide metrics, in the task manager's scope (e.g.
   * `Status.Shuffle.Netty.UsedMemorySegments`). The runtime's TaskExecutor always passes one;
   * absent when the environment is created without a runtime (tests, benchmarks).
   */
  readonly metrics?: ShuffleMetricSink;
  /**
   * Set when the task manager runs its slots on worker threads
   * (`taskmanager.task-slots.mode: threaded`): the environment serves one of its threads and
   * draws from the network memory they share. Only given to plugins whose factory sets
   * `supportsTaskSlotThreads`.
   */
  readonly taskSlotThreads?: TaskSlotThreadsContext;
}

/**
 * What the coordinator gives `ShuffleServiceFactory.createShuffleMaster` (Flink's
 * `ShuffleMasterContext`).
 */
export interface ShuffleMasterContext {
  /** The coordinator's configuration. */
  readonly configuration: ReadableConfig;
  /**
   * Reports an unrecoverable error of the master (e.g. the connection to an external shuffle
   * service was lost for good); the coordinator shuts down. Never throws.
   */
  onFatalError(error: Error): void;
}

/**
 * Per-task context, created once per task by `ShuffleEnvironment.createShuffleIOOwnerContext` and
 * passed to `createResultPartitionWriters` and `createInputGates` (Flink's `ShuffleIOOwnerContext`).
 */
export interface ShuffleIOOwnerContext {
  /** The task's name, for logs and metrics (e.g. `"Map (2/4)#0"`). */
  readonly ownerName: string;
  /** The task's execution attempt. */
  readonly executionAttemptId: ExecutionAttemptID;
  /**
   * Where the task's writers and gates register their metrics, in the task's scope (e.g.
   * `numBytesOut`, `Shuffle.Netty.Input.Buffers.inPoolUsage`). The runtime's TaskExecutor always
   * passes one; absent when the environment is used without a runtime.
   */
  readonly metrics?: ShuffleMetricSink;
}

/**
 * What the coordinator gives `ShuffleMaster.registerJob` for one job (Flink's `JobShuffleContext`):
 * the job's id and a way to tell the scheduler that partitions were lost.
 */
export interface JobShuffleContext {
  /** The job. */
  readonly jobId: JobID;
  /**
   * Tells the scheduler that these partitions are lost (e.g. their external storage was lost): it
   * stops tracking them, releases them (`releasePartitionExternally` is called for each, and the
   * worker holding one is told to release it), and re-runs their producers' regions at once, with
   * every reader of them, when a reader not deployed yet will read one; a reader already deployed
   * fails reading it with a partition exception, and that failure re-runs the producer. The job
   * fails only when its restart strategy allows no restart. Partitions of another job, of an older attempt of their
   * producer, or no longer tracked are ignored. Resolves once they were released.
   */
  stopTrackingAndReleasePartitions(partitionIds: readonly ResultPartitionID[]): Promise<void>;
}

/** The states of an execution attempt (Flink's `ExecutionState`). */
export type ExecutionState =
  | "CREATED"
  | "SCHEDULED"
  | "DEPLOYING"
  | "INITIALIZING"
  | "RUNNING"
  | "FINISHED"
  | "CANCELING"
  | "CANCELED"
  | "FAILED"
  | "RECONCILING";

/**
 * Lets a consumer ask the coordinator for the state of a partition's producer (Flink's
 * `PartitionProducerStateProvider`). Provided by the worker to `createInputGates`; called by an
 * input channel when a partition request keeps failing with "partition not found", to decide
 * whether to retry (producer `RUNNING`/`DEPLOYING`/`INITIALIZING`), stop (producer `FINISHED` of a
 * consumed pipelined partition) or fail (producer `FAILED`/`CANCELED`).
 */
export interface PartitionProducerStateProvider {
  /** The producer's current state; rejects when the coordinator cannot be reached. */
  requestPartitionProducerState(
    resultId: IntermediateDataSetID,
    partitionId: ResultPartitionID,
  ): Promise<ExecutionState>;
}
