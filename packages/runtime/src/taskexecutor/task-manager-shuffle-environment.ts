import type { ResourceID } from "@sluice/core";
import {
  type ConfigOption,
  NettyShuffleEnvironmentOptions,
  type ShuffleEnvironment,
  type TaskEventPublisher,
  TaskManagerOptions,
  type TaskSlotThreadsContext,
} from "@sluice/runtime-api";
import { createShuffleEnvironment, startShuffleEnvironment } from "../loader/plugin-contract.js";
import type {
  LoadedShuffleServiceFactory,
  LoaderConfiguration,
} from "../loader/shuffle-service-loader.js";
import { GroupMetricSink } from "../metrics/group-metric-sink.js";
import type { TaskManagerMetricGroup } from "../metrics/groups/task-manager-metric-group.js";
import { listenError } from "./listen-error.js";

/** What {@link startTaskManagerShuffleEnvironment} builds the environment's context from. */
export interface TaskManagerShuffleEnvironmentSpec {
  readonly configuration: LoaderConfiguration;
  readonly plugin: LoadedShuffleServiceFactory;
  readonly resourceId: ResourceID;
  readonly networkMemorySize: number;
  readonly localCommunicationOnly: boolean;
  readonly tmpDirPaths: readonly string[];
  readonly taskEventPublisher: TaskEventPublisher | undefined;
  readonly metricGroup: TaskManagerMetricGroup;
  /** Set when the environment serves one thread of a task manager with slot threads. */
  readonly taskSlotThreads?: TaskSlotThreadsContext;
}

/** A started shuffle environment and the data port other workers are told. */
export interface StartedShuffleEnvironment {
  readonly environment: ShuffleEnvironment;
  readonly dataPort: number;
}

/**
 * Creates and starts a worker's shuffle environment (Flink's
 * `TaskManagerServices.createShuffleEnvironment`), with the worker's metric group as its sink.
 * An environment that was created but cannot start is closed again.
 *
 * @throws the plugin's creation error; ConfigurationError for a data port that cannot be
 *   listened on (it names the address and `taskmanager.data.port`, or
 *   `taskmanager.data.bind-port`); PluginContractError when the plugin breaks the SPI.
 */
export async function startTaskManagerShuffleEnvironment(
  spec: TaskManagerShuffleEnvironmentSpec,
): Promise<StartedShuffleEnvironment> {
  const { configuration, plugin, resourceId } = spec;
  // The plugin listens on `taskmanager.data.port`; with a separate bind port it listens there
  // and the configured data port is what other workers are told (Flink's external data port).
  const bindPort = configuration.getOptional(NettyShuffleEnvironmentOptions.DATA_BIND_PORT);
  const environment = createShuffleEnvironment(plugin, {
    configuration: bindPort === undefined ? configuration : withDataPort(configuration, bindPort),
    taskExecutorResourceId: resourceId,
    networkMemorySize: spec.networkMemorySize,
    localCommunicationOnly: spec.localCommunicationOnly,
    hostAddress: configuration.get(TaskManagerOptions.HOST),
    numberOfSlots: configuration.get(TaskManagerOptions.NUM_TASK_SLOTS),
    tmpDirPaths: spec.tmpDirPaths,
    ...(spec.taskEventPublisher === undefined
      ? {}
      : { taskEventPublisher: spec.taskEventPublisher }),
    metrics: new GroupMetricSink(spec.metricGroup),
    ...(spec.taskSlotThreads === undefined ? {} : { taskSlotThreads: spec.taskSlotThreads }),
  });
  let dataPort: number;
  try {
    dataPort = await startShuffleEnvironment(plugin, environment);
  } catch (error) {
    await environment.close();
    const portOption =
      NettyShuffleEnvironmentOptions[bindPort === undefined ? "DATA_PORT" : "DATA_BIND_PORT"];
    throw listenError(error, {
      what: `the data server of TaskExecutor ${resourceId}`,
      host: configuration.get(NettyShuffleEnvironmentOptions.DATA_BIND_HOST),
      port: bindPort ?? configuration.get(NettyShuffleEnvironmentOptions.DATA_PORT),
      hostKey: NettyShuffleEnvironmentOptions.DATA_BIND_HOST.key,
      portKey: portOption.key,
    });
  }
  const externalPort = configuration.get(NettyShuffleEnvironmentOptions.DATA_PORT);
  if (bindPort !== undefined && externalPort > 0 && dataPort >= 0) dataPort = externalPort;
  return { environment, dataPort };
}

/** `configuration` with `taskmanager.data.port` replaced by `port` (what the plugin binds to). */
function withDataPort(configuration: LoaderConfiguration, port: number): LoaderConfiguration {
  const key = NettyShuffleEnvironmentOptions.DATA_PORT.key;
  return {
    configDir: configuration.configDir,
    get: <T>(option: ConfigOption<T>): T =>
      option.key === key ? (port as T) : configuration.get(option),
    getOptional: <T>(option: ConfigOption<T>) =>
      option.key === key ? (port as Exclude<T, undefined>) : configuration.getOptional(option),
    contains: (option) => option.key === key || configuration.contains(option),
  };
}
