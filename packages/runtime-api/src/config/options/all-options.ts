import type { ConfigOption } from "../config-option.js";
import { ExecutionOptions } from "./execution-options.js";
import { NettyShuffleEnvironmentOptions } from "./netty-shuffle-options.js";
import { NetworkMemoryOptions } from "./network-memory-options.js";
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
 * shuffle plugin's own options are declared by its factory (`ShuffleServiceFactory.configOptions`).
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
    title: "Execution",
    description: "Latency versus throughput: when partly filled buffers are sent.",
    options: Object.values(ExecutionOptions),
  },
  {
    title: "Security",
    description: "TLS for data connections between workers.",
    options: Object.values(SecurityOptions),
  },
];

/** Every option Sluice defines: used to detect unknown keys and to generate the docs. */
export const ALL_OPTIONS: readonly ConfigOption<unknown>[] = CONFIG_OPTION_GROUPS.flatMap(
  (group) => group.options,
);
