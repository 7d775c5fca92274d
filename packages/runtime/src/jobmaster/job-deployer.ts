import { hostname } from "node:os";
import { IllegalStateError } from "@sluice/core";
import type { CheckpointIDCounter, ReadableConfig, ShuffleMaster } from "@sluice/runtime-api";
import { DescriptorError, JobManagerOptions } from "@sluice/runtime-api";
import { createShuffleMaster } from "../loader/plugin-contract.js";
import {
  type LoadedShuffleServiceFactory,
  type LoaderConfiguration,
  loadShuffleServiceFactoryWithInfo,
  type ShuffleServiceLoaderOptions,
} from "../loader/shuffle-service-loader.js";
import { isLeadershipEpoch, randomLeadershipEpoch } from "../messages/leadership-epoch.js";
import { JobManagerMetricGroup } from "../metrics/groups/job-manager-metric-group.js";
import { MetricNames } from "../metrics/metric-names.js";
import { MetricRegistry } from "../metrics/metric-registry.js";
import { checkpointCoordinatorConfigurationOf } from "./checkpoints/checkpoint-coordinator-configuration.js";
import { CheckpointStatsTracker } from "./checkpoints/checkpoint-stats-tracker.js";
import type { CompletedCheckpoint } from "./checkpoints/completed-checkpoint.js";
import {
  loadSavepoint,
  type SavepointRestoreSettings,
} from "./checkpoints/completed-checkpoint-loader.js";
import { JobExecution } from "./job-execution.js";
import type { JobGraph } from "./job-graph.js";
import type { JobStatusListener } from "./job-status.js";
import type { DeploymentOrder } from "./pipelined-region-scheduling-strategy.js";
import type { Placement } from "./placement.js";
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
  /**
   * The coordinator's metric group. Default: a `JobManagerMetricGroup` (host: `host`) on a new
   * `MetricRegistry` with the reporters the configuration sets, which the deployer closes with
   * itself. A group passed here stays open: its owner closes it and its registry.
   */
  readonly metricGroup?: JobManagerMetricGroup;
  /** The coordinator's host for metrics (`<host>`; default: the machine's host name). */
  readonly host?: string;
}

/** Options of {@link JobDeployer.deploy}. */
export interface DeployOptions {
  /**
   * The order within what is deployed at once (a pipelined region, and the regions whose inputs
   * became ready together). `producers-first` (default): producers are deployed before their
   * consumers, whose gates then get the real shuffle descriptors. `consumers-first`: consumers
   * first, with unknown descriptors that `updatePartitions` replaces once each producer is
   * deployed (Flink's lazy deployment). A region that reads a blocking data set from another
   * region is always deployed after that data set's producers finished. The subtasks of a vertex
   * are submitted together, without waiting for one another's answer; a vertex waits for the
   * answers of the vertices connected to it that come before it in this order.
   */
  readonly order?: DeploymentOrder;
  /**
   * The job's configuration: `execution.checkpointing.*`, `state.checkpoints.*`,
   * `restart-strategy.*` and `jobmanager.execution.failover-strategy` are read from it. Default: the deployer's configuration.
   */
  readonly configuration?: ReadableConfig;
  /**
   * Told of each status change of the job as it happens, with the failure behind FAILING and
   * RESTARTING (Flink's JobStatusListener): how an application reports every failover.
   */
  readonly statusListener?: JobStatusListener;
  /**
   * Restores the job from a checkpoint an earlier run of it completed (read with
   * `loadCompletedCheckpoint`): a job manager that took over after a failover redeploys the
   * job from its latest completed checkpoint this way. A checkpoint read with `loadSavepoint`
   * works too (the same as {@link savepointRestore}).
   */
  readonly restoreFrom?: CompletedCheckpoint;
  /**
   * Starts the job from a savepoint or a retained checkpoint of any earlier job, named by path
   * (Flink's `SavepointRestoreSettings`, `flink run -s`): read with `loadSavepoint` when the job
   * is deployed (ignored when {@link restoreFrom} is given). Vertices are matched by name; a
   * vertex may run at another parallelism than the savepoint's (its keyed state redistributed by
   * key group, its operator list state by its mode, see `redistributeTaskState`) but not with
   * another max parallelism. The job never deletes the savepoint, and its checkpoint ids
   * continue after the savepoint's.
   *
   * @throws (from deploy) CheckpointError when the savepoint cannot be read;
   *   StateAssignmentError (`SLUICE_ERR_STATE_ASSIGNMENT`) naming the vertex when its state does
   *   not fit the job.
   */
  readonly savepointRestore?: SavepointRestoreSettings;
  /**
   * Stores each checkpoint the job completes where a job manager taking over finds it, before
   * any task is told that it completed: a task commits what a checkpoint holds once told, so
   * only a stored checkpoint may be notified (Flink's CompletedCheckpointStore). It resolves
   * with the ids of the checkpoints the store dropped to stay within its retained number (their
   * folders are deleted then), or with nothing (the job keeps `state.checkpoints.num-retained`
   * itself). A rejection fails that checkpoint; its folder is deleted only when the store surely
   * did not store it (`SLUICE_ERR_HA_FENCED`, `SLUICE_ERR_INVALID_ARGUMENT`). The cluster's
   * `JobManager` passes its high-availability store here.
   */
  readonly storeCompletedCheckpoint?: (
    checkpoint: CompletedCheckpoint,
  ) => Promise<readonly bigint[] | undefined>;
  /**
   * Where the job's checkpoint ids come from: under high availability the store's counter
   * (`HighAvailabilityServices.createCheckpointIDCounter`), so that no two job managers use the
   * same id. Default: a counter of the job's own, from 1 (after a restore: above the restored
   * checkpoint's id).
   */
  readonly checkpointIdCounter?: CheckpointIDCounter;
  /**
   * Whether the job's end deletes its retained checkpoints as
   * `execution.checkpointing.externalized-checkpoint-retention` says (default true). False when
   * the owner of the completed-checkpoint store removes them once the job's result is stored.
   */
  readonly discardRetainedCheckpointsOnShutdown?: boolean;
  /**
   * The leadership of the job manager that deploys the job, as every task learns it
   * (`Task.leadershipEpoch`; see `leadershipEpochOf` for a fencing token's). Default: a random
   * epoch of this deployment. The cluster's `JobManager` passes its leadership's.
   *
   * @throws DescriptorError (from deploy) when it is not 1 to 32 letters and digits.
   */
  readonly leadershipEpoch?: string;
}

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
  /**
   * The coordinator's metrics (scope `metrics.scope.jm`): `numRunningJobs`, and a group per
   * running job (`uptime`). Its registry's reporters are the coordinator's endpoints.
   */
  readonly metricGroup: JobManagerMetricGroup;
  private readonly executions = new Set<JobExecution>();
  private readonly ownsMetrics: boolean;
  private fatalError: Error | undefined;
  private closed = false;

  private constructor(
    plugin: LoadedShuffleServiceFactory,
    master: ShuffleMaster,
    configuration: LoaderConfiguration,
    metricGroup: JobManagerMetricGroup,
    ownsMetrics: boolean,
  ) {
    this.plugin = plugin;
    this.master = master;
    this.configuration = configuration;
    this.metricGroup = metricGroup;
    this.ownsMetrics = ownsMetrics;
    metricGroup.gauge(MetricNames.NUM_RUNNING_JOBS, () => this.executions.size);
  }

  /**
   * Loads the shuffle plugin, creates its ShuffleMaster and starts it.
   *
   * @throws the loader's errors (`SLUICE_ERR_PLUGIN_*`), PluginContractError when
   *   `createShuffleMaster` returns a Promise or a malformed master, or the errors of the metric
   *   reporters' set-up (`SLUICE_ERR_METRIC_REPORTER`, ...); nothing stays open when it fails.
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
    const metricGroup =
      options.metricGroup ??
      new JobManagerMetricGroup(
        await MetricRegistry.fromConfiguration(configuration, {
          ...(options.loader === undefined ? {} : { loader: options.loader }),
        }),
        options.host ?? hostname(),
      );
    // Every plugin is loaded: the keys none of them (nor Sluice) knows can be reported now.
    configuration.reportUnknownKeys?.();
    deployer = new JobDeployer(
      plugin,
      master,
      configuration,
      metricGroup,
      options.metricGroup === undefined,
    );
    try {
      await master.start();
    } catch (error) {
      await deployer.closeMetrics();
      throw error;
    }
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
    if (options.leadershipEpoch !== undefined && !isLeadershipEpoch(options.leadershipEpoch)) {
      throw new DescriptorError(
        `cannot deploy job ${graph.name}: its leadershipEpoch must be 1 to 32 letters and digits (see leadershipEpochOf), got ${JSON.stringify(options.leadershipEpoch)}`,
      );
    }
    const checkpointing = checkpointCoordinatorConfigurationOf(configuration);
    const restoreFrom =
      options.restoreFrom ??
      (options.savepointRestore === undefined
        ? undefined
        : await loadSavepoint(options.savepointRestore, graph));
    const execution = new JobExecution(
      graph,
      this.master,
      placement,
      options.order ?? "producers-first",
      {
        ...(checkpointing === undefined ? {} : { checkpointing }),
        ...(options.statusListener === undefined ? {} : { statusListener: options.statusListener }),
        ...(restoreFrom === undefined ? {} : { restoreFrom }),
        ...(options.storeCompletedCheckpoint === undefined
          ? {}
          : { storeCompletedCheckpoint: options.storeCompletedCheckpoint }),
        ...(options.checkpointIdCounter === undefined
          ? {}
          : { checkpointIdCounter: options.checkpointIdCounter }),
        ...(options.discardRetainedCheckpointsOnShutdown === undefined
          ? {}
          : {
              discardRetainedCheckpointsOnShutdown: options.discardRetainedCheckpointsOnShutdown,
            }),
        restartStrategy: createRestartBackoffTimeStrategy(configuration),
        leadershipEpoch: options.leadershipEpoch ?? randomLeadershipEpoch(),
        failoverStrategy: configuration.get(JobManagerOptions.EXECUTION_FAILOVER_STRATEGY),
      },
    );
    this.executions.add(execution);
    const jobGroup = this.metricGroup.addJob(graph.jobId.toString(), graph.name);
    const clock = this.metricGroup.registry.clock;
    const deployedAt = clock.relativeTimeNanos();
    // Flink's uptime: how long the job has been running; 0 before it runs.
    jobGroup.gauge(MetricNames.UP_TIME, () =>
      execution.status === "RUNNING"
        ? Math.floor((clock.relativeTimeNanos() - deployedAt) / 1e6)
        : 0,
    );
    new CheckpointStatsTracker(execution).register(jobGroup);
    void execution.terminated.then(() => {
      this.executions.delete(execution);
      jobGroup.close();
    });
    if (this.fatalError !== undefined) execution.fail(this.fatalError);
    else await execution.start();
    return execution;
  }

  /**
   * Cancels every running job, waits for them to end, and closes the master and the metric
   * reporters it started. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const running = [...this.executions];
    for (const execution of running) execution.cancel("the JobDeployer is closing");
    await Promise.all(running.map((execution) => execution.terminated));
    try {
      await this.master.close();
    } finally {
      await this.closeMetrics();
    }
  }

  private async closeMetrics(): Promise<void> {
    if (!this.ownsMetrics) return;
    this.metricGroup.close();
    await this.metricGroup.registry.close();
  }

  private onFatalError(error: Error): void {
    this.fatalError ??= error;
    for (const execution of this.executions) execution.fail(error);
  }
}
