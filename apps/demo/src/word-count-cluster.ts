import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  DISTRIBUTION_LOADER,
  type JobDetailsInfo,
  type RestClusterClient,
  shufflePluginIdentity,
} from "@sluice/cluster";
import { ConfigurationError } from "@sluice/core";
import type { Configuration } from "@sluice/runtime";
import {
  type LoadedShuffleServiceFactory,
  loadConfigurationAndShufflePlugin,
} from "@sluice/runtime/plugin";
import { HighAvailabilityOptions, RestOptions, ShuffleServiceOptions } from "@sluice/runtime-api";
import {
  applyBatchDefaults,
  applyBatchRestartStrategy,
  type BatchSummary,
  compressionCodecOf,
} from "./batch-mode.js";
import {
  applyCheckpointingFlags,
  type RecoverySettings,
  recoverySettingsOf,
} from "./checkpointing-options.js";
import type { DemoOptions } from "./cli.js";
import type { ListedTaskManager } from "./job-report.js";
import { checkParallelismFitsNetworkMemory } from "./parallelism-memory.js";
import { applyRemoteShuffleFlags } from "./remote-shuffle-workers.js";
import { checkOutputDirectory } from "./sink-options.js";
import type { KilledTaskManagerReport, ProcessReport } from "./summary.js";

/**
 * The folder the task managers load the job module from (`--usrlib`): the demo's `dist/`, also
 * when this module runs from its TypeScript source (the tests), since processes load JavaScript.
 */
export const JOB_MODULE_DIR = path.resolve(fileURLToPath(new URL("..", import.meta.url)), "dist");

/** How the task managers name the job module: relative to their `--usrlib` folder. */
export const JOB_MODULE_REFERENCE = "./word-count-job.js";

/** What a cluster says about a job that ended, beside what its REST API says. */
export interface ClusterEnd {
  /** The job manager and the task managers, with what each reported. */
  readonly processes: readonly ProcessReport[];
  /** Every task manager that registered, as `GET /taskmanagers` lists them. */
  readonly taskManagers: readonly ListedTaskManager[];
  /** The task manager `--kill-task-manager-after` killed. */
  readonly killedTaskManager?: KilledTaskManagerReport | undefined;
  /** Batch mode: the stages and what the blocking partitions put on disk. */
  readonly batch?: BatchSummary | undefined;
  /** What is wrong (a task manager that did not report its shutdown, files left behind). */
  readonly differences: readonly string[];
  /** Lines printed after the summary (the failovers of standby job managers). */
  readonly epilogue?: readonly string[];
  /** Fields the `--json` summary adds (`jobManagerFailovers`). */
  readonly json?: Readonly<Record<string, unknown>>;
}

/**
 * The cluster a run of the word count uses: one the demo started on this host (one job manager,
 * or standbys under high availability) or a session cluster it only submits to. The demo follows
 * the job through the REST API of the job manager that leads; the cluster adds what only it knows.
 */
export interface WordCountCluster {
  /** The plugin every task manager loaded (`<module>#<export>`), and its module file if known. */
  readonly shuffle: string;
  readonly shuffleModule: string | undefined;
  /** Whether the job takes checkpoints (and in which mode) and restarts. */
  readonly recovery: RecoverySettings;
  /** How many task managers run the job. */
  readonly taskManagers: number;
  /** A client of the REST endpoint of the job manager that leads now; undefined while none does. */
  rest(): RestClusterClient | undefined;
  /** The job was submitted: a kill is scheduled from here. */
  jobSubmitted(jobId: string): Promise<void>;
  /** What the job waits for now (for the progress line). */
  waiting(): readonly string[];
  /**
   * The job ended (`job`: its final details): the kills stop, and the cluster collects what the
   * summary needs (batch reports, the task managers' shutdown reports).
   */
  finish(jobId: string, job: JobDetailsInfo | undefined, failed: boolean): Promise<ClusterEnd>;
  /** Stops what the demo started. Idempotent. */
  close(): Promise<void>;
}

/** The configuration a cluster the demo starts runs with, and its shuffle plugin. */
export interface DemoConfiguration {
  readonly configuration: Configuration;
  readonly plugin: LoadedShuffleServiceFactory;
  /** `<module>#<export>` as every task manager must have loaded it. */
  readonly shuffle: string;
  readonly recovery: RecoverySettings;
  /** Batch mode: the codec of the blocking partitions. */
  readonly codec: string | undefined;
}

/**
 * Loads the configuration of a cluster the demo starts (`--config`, `-D`, then the flags that
 * stand for keys), with its shuffle plugin, as the `sluice` processes load theirs; sets the
 * demo's defaults for batch mode and the remote shuffle, and checks what would fail later.
 *
 * @throws ConfigurationError (and the loader's errors) for a bad configuration or plugin.
 */
export async function loadDemoConfiguration(
  options: DemoOptions,
  say: (text: string) => void,
): Promise<DemoConfiguration> {
  const { configuration, shuffle: plugin } = await loadConfigurationAndShufflePlugin({
    ...(options.configFile === undefined ? {} : { configFile: options.configFile }),
    args: options.dynamicProperties,
    overrides: {
      ...(options.shuffle === undefined
        ? {}
        : { [ShuffleServiceOptions.SHUFFLE_SERVICE_FACTORY_CLASS.key]: options.shuffle }),
      ...(options.highAvailability === undefined
        ? {}
        : { [HighAvailabilityOptions.HA_MODE.key]: options.highAvailability }),
    },
    loader: DISTRIBUTION_LOADER,
  });
  applyCheckpointingFlags(configuration, options);
  applyRemoteShuffleFlags(configuration, plugin, options);
  if (options.mode === "streaming") {
    checkParallelismFitsNetworkMemory(configuration, options.parallelism, options.taskManagers);
  }
  if (options.output !== undefined) {
    await checkOutputDirectory(options.output, (message) => new ConfigurationError(message));
  }
  let codec: string | undefined;
  if (options.mode === "batch") {
    applyBatchDefaults(configuration);
    codec = compressionCodecOf(configuration);
    const kills =
      options.killTaskManagerAfterMs !== undefined ||
      options.killTaskManagerBetweenStages ||
      options.killShuffleWorkerAfterMs !== undefined;
    const strategy = kills ? applyBatchRestartStrategy(configuration) : undefined;
    if (strategy !== undefined) say(`${strategy}\n`);
  }
  // The demo's dashboard refreshes every second, and its progress line reads the task managers'
  // metrics every half second.
  if (!configuration.contains(RestOptions.WEB_REFRESH_INTERVAL)) {
    configuration.set(RestOptions.WEB_REFRESH_INTERVAL, 1000);
  }
  if (!configuration.contains(RestOptions.METRIC_FETCHER_UPDATE_INTERVAL)) {
    configuration.set(RestOptions.METRIC_FETCHER_UPDATE_INTERVAL, 500);
  }
  return {
    configuration,
    plugin,
    shuffle: shufflePluginIdentity(plugin).reference,
    recovery: recoverySettingsOf(configuration),
    codec,
  };
}

/** The run's first line. */
export function headerOf(options: DemoOptions, taskManagers: number, shuffle: string): string {
  return (
    `Sluice demo: word count of ${options.records.toLocaleString("en-US")} words, parallelism ${options.parallelism}, ` +
    `${taskManagers} task managers, shuffle ${shuffle}` +
    `${options.mode === "batch" ? ", batch mode (BLOCKING partitions, stage by stage)" : ""}\n`
  );
}
