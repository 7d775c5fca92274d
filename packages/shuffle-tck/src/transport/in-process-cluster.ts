import type { ExecutionAttemptID, JobID, ResultPartitionID } from "@sluice/core";
import type { NetworkShuffleEnvironment } from "@sluice/network/plugin";
import {
  Configuration,
  JobDeployer,
  type Task,
  TaskExecutor,
  TaskNotFoundError,
} from "@sluice/runtime";
import type {
  JobMasterGateway,
  TaskDeploymentDescriptor,
  TaskExecutorGateway,
  TaskManagerLocation,
} from "@sluice/runtime/plugin";
import type { PartitionInfo } from "@sluice/runtime-api";
import { expect } from "vitest";
import { deployExchange, type Exchange, type ExchangeSpec } from "../exchange.js";
import { TckTasks } from "../tck-tasks.js";

/** Raw configuration values by key. */
export type RawConfig = Readonly<Record<string, unknown>>;

/** The tasks of an exchange deployed but not run: the test drives their writers and gates. */
export interface DeployedExchange {
  readonly producers: readonly Task[];
  readonly consumers: readonly Task[];
}

/** The NetworkShuffleEnvironment of a TaskExecutor of a bundled plugin. */
export function networkEnvironmentOf(executor: TaskExecutor): NetworkShuffleEnvironment {
  return executor.shuffleEnvironment as unknown as NetworkShuffleEnvironment;
}

/** How a test wants the job side to see a TaskExecutor. */
export interface GatewayOptions {
  /** Announce this data port in the executor's partitions (a proxy, a hostile fake producer). */
  readonly advertisedPort?: number;
  /** Deploy tasks without running them, collecting them here (the test drives them). */
  readonly deployOnlyInto?: Task[];
  /**
   * Deploy nothing: the job side counts the tasks as deployed, but they never run here (a
   * consumer a raw peer stands in for, a producer that never comes up).
   */
  readonly neverDeploy?: boolean;
  /**
   * Ignore the job master's cancel requests: the tasks end by themselves (how the data plane
   * propagated a failure, which a job's cancellation would otherwise race) or when the cluster
   * closes its executors.
   */
  readonly ignoreCancels?: boolean;
  /**
   * Deploy only once this settles, as a slow worker would: a test acts between a blocking
   * partition's completion and its consumers' deployment.
   */
  readonly deployAfter?: Promise<unknown>;
}

/** `executor` as the job side sees it, changed as `options` say. */
export function gatewayOf(
  executor: TaskExecutor,
  options: GatewayOptions = {},
): TaskExecutorGateway {
  const location: TaskManagerLocation =
    options.advertisedPort === undefined
      ? executor.location
      : { ...executor.location, dataPort: options.advertisedPort };
  const deployed = options.deployOnlyInto;
  return {
    location,
    async submitTask(descriptor: TaskDeploymentDescriptor, jobMaster: JobMasterGateway) {
      if (options.neverDeploy === true) return;
      await options.deployAfter;
      if (deployed === undefined) await executor.submitTask(descriptor, jobMaster);
      else deployed.push(await executor.deployTask(descriptor, jobMaster));
    },
    cancelTask: async (attempt: ExecutionAttemptID) => {
      if (options.neverDeploy === true) {
        throw new TaskNotFoundError(`${attempt} was never deployed on this TaskExecutor`);
      }
      if (options.ignoreCancels !== true) await executor.cancelTask(attempt);
    },
    updatePartitions: (attempt: ExecutionAttemptID, infos: readonly PartitionInfo[]) =>
      executor.updatePartitions(attempt, infos),
    releasePartitions: (jobId: JobID, ids: readonly ResultPartitionID[]) =>
      executor.releasePartitions(jobId, ids),
  };
}

/** `executor`, announcing `dataPort` in its partitions' descriptors. */
export function advertising(executor: TaskExecutor, dataPort: number): TaskExecutorGateway {
  return gatewayOf(executor, { advertisedPort: dataPort });
}

/**
 * The transport-level kit: several TaskExecutors of one plugin in this process (each with its own
 * environment and data server, so channels between them go over the plugin's transport), and a
 * JobDeployer that deploys exchanges onto them. {@link close} closes everything and checks that
 * every network buffer of every executor is back in its pool.
 */
export class InProcessCluster {
  /** The kit's task code, shared by the executors (progress is kept by execution attempt). */
  readonly tasks = new TckTasks();
  private readonly executors: TaskExecutor[] = [];
  private readonly jobsToCancel: Exchange[] = [];
  private deployer: JobDeployer | undefined;

  /**
   * @param factory - the `shuffle-service-factory.class` value of the plugin under test.
   * @param config - configuration of every executor.
   */
  constructor(
    private readonly factory: string,
    private readonly config: RawConfig,
  ) {}

  private configuration(extra: RawConfig = {}): Configuration {
    return new Configuration({
      "taskmanager.host": "127.0.0.1",
      "taskmanager.data.bind-host": "127.0.0.1",
      ...this.config,
      ...extra,
      "shuffle-service-factory.class": this.factory,
    });
  }

  /** Starts a TaskExecutor of the plugin with the cluster's configuration plus `extra`. */
  async startExecutor(extra: RawConfig = {}): Promise<TaskExecutor> {
    const executor = await TaskExecutor.start(this.configuration(extra), this.tasks.userCode());
    this.executors.push(executor);
    return executor;
  }

  /**
   * Deploys an exchange and runs its tasks (through the job side, as an application does);
   * consumer vertex `i` runs on `consumerSide[i]` when given one gateway per reader.
   */
  async deploy(
    spec: ExchangeSpec,
    producerSide: TaskExecutorGateway,
    consumerSide: TaskExecutorGateway | readonly TaskExecutorGateway[],
  ): Promise<Exchange> {
    this.deployer ??= await JobDeployer.start(this.configuration());
    return deployExchange(this.deployer, "in-process", spec, producerSide, consumerSide);
  }

  /**
   * Deploys an exchange's tasks without running them: their writers and gates are set up and
   * their partitions requested, and the test drives them through `task.partitions` and
   * `task.gates`.
   */
  async deployWithoutRunning(
    spec: ExchangeSpec,
    producerSide: TaskExecutor,
    consumerSide: TaskExecutor,
    producerOptions: Omit<GatewayOptions, "deployOnlyInto"> = {},
  ): Promise<DeployedExchange> {
    const producers: Task[] = [];
    const consumers: Task[] = [];
    const exchange = await this.deploy(
      spec,
      gatewayOf(producerSide, { ...producerOptions, deployOnlyInto: producers }),
      gatewayOf(consumerSide, { deployOnlyInto: consumers }),
    );
    // Its tasks never run to an end: the job ends when the test closes the cluster.
    this.jobsToCancel.push(exchange);
    return { producers, consumers };
  }

  /** Closes every executor and the deployer; then every network buffer must be in its pool. */
  async close(): Promise<void> {
    for (const { execution } of this.jobsToCancel.splice(0)) execution.cancel("the test ended");
    for (const executor of this.executors) await executor.close();
    await this.deployer?.close();
    this.deployer = undefined;
    for (const executor of this.executors.splice(0)) {
      const pool = networkEnvironmentOf(executor).networkBufferPool;
      expect(pool.getNumberOfAvailableMemorySegments(), "network buffers back in the pool").toBe(
        pool.totalNumberOfMemorySegments,
      );
    }
  }
}
