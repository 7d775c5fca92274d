import type { ConfigOption } from "../config-option.js";
import { BatchShuffleOptions } from "./batch-shuffle-options.js";
import { CheckpointingOptions } from "./checkpointing-options.js";
import { ExecutionCheckpointingOptions } from "./execution-checkpointing-options.js";
import { ExecutionOptions } from "./execution-options.js";
import { HeartbeatManagerOptions } from "./heartbeat-manager-options.js";
import { HighAvailabilityOptions } from "./high-availability-options.js";
import { JobManagerOptions } from "./job-manager-options.js";
import { MetricOptions } from "./metric-options.js";
import { NettyShuffleEnvironmentOptions } from "./netty-shuffle-options.js";
import { NetworkMemoryOptions } from "./network-memory-options.js";
import { RestOptions } from "./rest-options.js";
import { RestartStrategyOptions } from "./restart-strategy-options.js";
import { SecurityOptions } from "./security-options.js";
import { ShuffleServiceOptions } from "./shuffle-service-options.js";
import { TaskManagerOptions } from "./task-manager-options.js";

/** A titled group of options, one per concern, as `docs/configuration.md` shows them. */
export interface ConfigOptionGroup {
  /** Section title. */
  readonly title: string;
  /** One paragraph on what the options of this group control. */
  readonly description: string;
  /** The options, in documentation order. */
  readonly options: readonly ConfigOption<unknown>[];
}

/**
 * Every option Sluice defines, grouped by concern (the source of `docs/configuration.md`). A
 * plugin's own options are declared by its factory (`ShuffleServiceFactory.configOptions`,
 * `MetricReporterFactory.configOptions`).
 */
export const CONFIG_OPTION_GROUPS: readonly ConfigOptionGroup[] = [
  {
    title: "Shuffle plugin",
    description: "Which `ShuffleServiceFactory` the coordinator and the workers load.",
    options: Object.values(ShuffleServiceOptions),
  },
  {
    title: "Worker",
    description: "Identity and resources of a worker process.",
    options: Object.values(TaskManagerOptions),
  },
  {
    title: "Cluster",
    description:
      "Where task managers find the job manager, and how each side notices that the other is " +
      "gone.",
    options: [...Object.values(JobManagerOptions), ...Object.values(HeartbeatManagerOptions)],
  },
  {
    title: "High availability",
    description:
      "Standby job managers: leader election, leader retrieval and the job manager's stores in " +
      "a coordination service (etcd), their data in a shared folder.",
    options: Object.values(HighAvailabilityOptions),
  },
  {
    title: "REST endpoint and web dashboard",
    description:
      "Where the job manager serves its REST API and live dashboard for every job it runs, the " +
      "limits that keep a slow or hostile client from growing its memory, and what it keeps " +
      "of ended jobs (see [security.md](security.md#limits-of-the-rest-endpoint)).",
    options: Object.values(RestOptions),
  },
  {
    title: "Network memory and buffers",
    description:
      "How much memory the network stack of a worker owns and how it is split into buffers for " +
      "input channels, input gates and output pools.",
    options: Object.values(NetworkMemoryOptions),
  },
  {
    title: "Network transport and protocol",
    description:
      "Data server, connections, partition request retries, and the limits checked against " +
      "lengths read from the wire.",
    options: Object.values(NettyShuffleEnvironmentOptions),
  },
  {
    title: "Batch shuffle",
    description:
      "Blocking partitions (sort-merge files under `io.tmp.dirs`), the memory that reads them " +
      "back, and buffer compression.",
    options: Object.values(BatchShuffleOptions),
  },
  {
    title: "Execution",
    description: "Latency versus throughput: when partly filled buffers are sent.",
    options: Object.values(ExecutionOptions),
  },
  {
    title: "Checkpointing",
    description:
      "When the job side triggers checkpoints, how tasks align their barriers, and where and " +
      "how long snapshots are kept.",
    options: [
      ...Object.values(ExecutionCheckpointingOptions),
      ...Object.values(CheckpointingOptions),
    ],
  },
  {
    title: "Restarts",
    description: "How a job recovers from a failed task or a lost worker.",
    options: Object.values(RestartStrategyOptions),
  },
  {
    title: "Security",
    description:
      "TLS with mutual authentication for data connections between workers and for the " +
      "control plane between the job manager and its task managers.",
    options: Object.values(SecurityOptions),
  },
  {
    title: "Metrics",
    description:
      "Metric reporters (plugins loaded by class name, one instance per process) and the scope " +
      "formats that name every metric. `<name>` is a reporter name of your choice; see " +
      "[metrics.md](metrics.md) for every metric.",
    options: Object.values(MetricOptions),
  },
];

/** Every option Sluice defines: used to detect unknown keys and to generate the docs. */
export const ALL_OPTIONS: readonly ConfigOption<unknown>[] = CONFIG_OPTION_GROUPS.flatMap(
  (group) => group.options,
);
