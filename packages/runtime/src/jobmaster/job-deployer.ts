import { IllegalStateError } from "@sluice/core";
import type { ReadableConfig, ShuffleMaster } from "@sluice/runtime-api";
import { checkpointCoordinatorConfigurationOf } from "../checkpointing/checkpoint-coordinator-configuration.js";
import { createShuffleMaster } from "../loader/plugin-contract.js";
import {
  type LoadedShuffleServiceFactory,
  type LoaderConfiguration,
  loadShuffleServiceFactoryWithInfo,
  type ShuffleServiceLoaderOptions,
} from "../loader/shuffle-service-loader.js";
import type { TaskExecutorGateway } from "../taskexecutor/task-executor-gateway.js";
import { type DeploymentOrder, JobExecution } from "./job-execution.js";
import type { JobGraph, JobVertex } from "./job-graph.js";
import { createRestartBackoffTimeStrategy } from "./restart-backoff-time-strategy.js";

/** Options of {@link JobDeployer.start}. */
export interface JobDeployerOptions {
  /** Where the loader resolves `shuffle-service-factory.class` from. */
  readonly loader?: ShuffleServiceLoaderOptions;
  /**
   * Called when the shuffle master reports an unrecoverable error (`ShuffleMasterContext`);
   * running jobs fail with it too.
   */
  readonly onFatalError?: (error: Error) => void;
}

/** Options of {@link JobDeployer.deploy}. */
export interface DeployOptions {
  /**
   * The order within what is deployed at once (a pipelined region, and the regions whose inputs
   * became ready together). `producers-first` (default): producers are deployed before their
   * consumers, whose gates then get the real shuffle descriptors. `consumers-first`: consumers
   * first, with unknown descriptors that `updatePartitions` replaces once each producer is
   * deployed (Flink's lazy deployment). A region that reads a blocking data set from another
   * region is always deployed after that data set's producers finished.
   */
  readonly order?: DeploymentOrder;
  /**
   * The job's configuration: `execution.checkpointing.*`, `state.checkpoints.*` and
   * `restart-strategy.*` are read from it. Default: the deployer's configuration.
   */
  readonly configuration?: ReadableConfig;
}

/** What a {@link Placement} knows when it is asked. */
export interface PlacementContext {
  /** 0 for the job's first deployment, n for the n-th restart. */
  readonly attemptNumber: number;
  /** Where the subtask's previous attempt ran (absent for the first deployment). */
  readonly previous?: TaskExecutorGateway;
  /**
   * True for a TaskExecutor the job was told is lost (`JobExecution.notifyTaskExecutorLost`):
   * it must not be returned again.
   */
  isLost(gateway: TaskExecutorGateway): boolean;
}

/**
 * Picks the TaskExecutor each subtask runs on (Flink's slot assignment). Called for every
 * subtask before anything is deployed, and again for every subtask before each restart — where
 * it may wait (return a Promise) until a replacement for a lost TaskExecutor has registered:
 *
 * ```ts
 * const placement: Placement = async (vertex, i, { isLost }) => {
 *   const executor = executors[i % executors.length];
 *   return isLost(executor) ? await cluster.replacementFor(executor) : executor;
 * };
 * ```
 *
 * Returning a lost TaskExecutor fails the job (IllegalStateError).
 */
export type Placement = (
  vertex: JobVertex,
  subtaskIndex: number,
  context: PlacementContext,
) => TaskExecutorGateway | Promise<TaskExecutorGateway>;

/**
 * The job side of the shuffle (Flink's scheduler with the cluster's ShuffleMaster): it loads the
 * configured plugin, creates and starts its ShuffleMaster, and deploys job graphs onto
 * TaskExecutors — registering every partition with the master, building each task's deployment
 * descriptor (partition types, subpartition ranges, serializers, partitioners), and releasing
 * the partitions when the job ends. One deployer serves any number of jobs.
 */
export class JobDeployer {
  /** The loaded shuffle plugin. */
  readonly plugin: LoadedShuffleServiceFactory;
  /** The plugin's master. */
  readonly master: ShuffleMaster;
  /** The configuration it was started with (the default of every job's). */
  readonly configuration: LoaderConfiguration;
  private readonly executions = new Set<JobExecution>();
  private fatalError: Error | undefined;
  private closed = false;

  private constructor(
    plugin: LoadedShuffleServiceFactory,
    master: ShuffleMaster,
    configuration: LoaderConfiguration,
  ) {
    this.plugin = plugin;
    this.master = master;
    this.configuration = configuration;
  }

  /**
   * Loads the shuffle plugin, creates its ShuffleMaster and starts it.
   *
   * @throws the loader's errors (`SLUICE_ERR_PLUGIN_*`), or PluginContractError when
   *   `createShuffleMaster` returns a Promise or a malformed master.
   */
  static async start(
    configuration: LoaderConfiguration,
    options: JobDeployerOptions = {},
  ): Promise<JobDeployer> {
    const plugin = await loadShuffleServiceFactoryWithInfo(configuration, options.loader);
    let deployer: JobDeployer | undefined;
    const master = createShuffleMaster(plugin, {
      configuration,
      onFatalError: (error) => {
        options.onFatalError?.(error);
        deployer?.onFatalError(error);
      },
    });
    deployer = new JobDeployer(plugin, master, configuration);
    await master.start();
    return deployer;
  }

  /**
   * Deploys `graph`: registers it with the master, then deploys every vertex whose inputs are
   * ready onto the TaskExecutors `placement` picks. Resolves once the first tasks are submitted;
   * follow the job through the returned {@link JobExecution}. With
   * `execution.checkpointing.interval` set, the job takes checkpoints; `restart-strategy.*`
   * decides whether it restarts after a failure.
   *
   * @throws ConfigurationError when a checkpointing or restart key holds an invalid value.
   */
  async deploy(
    graph: JobGraph,
    placement: Placement,
    options: DeployOptions = {},
  ): Promise<JobExecution> {
    if (this.closed) {
      throw new IllegalStateError(`cannot deploy job ${graph.name}: the JobDeployer is closed`);
    }
    const configuration = options.configuration ?? this.configuration;
    const checkpointing = checkpointCoordinatorConfigurationOf(configuration);
    const execution = new JobExecution(
      graph,
      this.master,
      placement,
      options.order ?? "producers-first",
      {
        ...(checkpointing === undefined ? {} : { checkpointing }),
        restartStrategy: createRestartBackoffTimeStrategy(configuration),
      },
    );
    this.executions.add(execution);
    void execution.terminated.then(() => this.executions.delete(execution));
    if (this.fatalError !== undefined) execution.fail(this.fatalError);
    else await execution.start();
    return execution;
  }

  /** Cancels every running job, waits for them to end, and closes the master. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const running = [...this.executions];
    for (const execution of running) execution.cancel("the JobDeployer is closing");
    await Promise.all(running.map((execution) => execution.terminated));
    await this.master.close();
  }

  private onFatalError(error: Error): void {
    this.fatalError ??= error;
    for (const execution of this.executions) execution.fail(error);
  }
}
