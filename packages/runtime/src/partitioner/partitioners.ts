import { describeValue, IllegalArgumentError } from "@sluice/core";
import { BroadcastPartitioner } from "./broadcast-partitioner.js";
import { CustomPartitionerWrapper, type Partitioner } from "./custom-partitioner-wrapper.js";
import { ForwardPartitioner } from "./forward-partitioner.js";
import { GlobalPartitioner } from "./global-partitioner.js";
import { KeyGroupStreamPartitioner } from "./key-group-stream-partitioner.js";
import type { KeySelector } from "./key-selector.js";
import type { RandomSource } from "./random-source.js";
import { RebalancePartitioner } from "./rebalance-partitioner.js";
import { RescalePartitioner } from "./rescale-partitioner.js";
import { ShufflePartitioner } from "./shuffle-partitioner.js";
import type { StreamPartitioner } from "./stream-partitioner.js";

/**
 * The partitioner names {@link createChannelSelector} accepts: the names Flink prints for its
 * partitioners, which are also what each Sluice partitioner's `toString()` returns.
 */
export const PARTITIONER_NAMES = [
  "FORWARD",
  "REBALANCE",
  "RESCALE",
  "SHUFFLE",
  "BROADCAST",
  "GLOBAL",
  "HASH",
  "CUSTOM",
] as const;

/** One of {@link PARTITIONER_NAMES}. */
export type PartitionerName = (typeof PARTITIONER_NAMES)[number];

/**
 * What a partitioner needs beyond its name. Each field is read only by the partitioners listed
 * with it and ignored by the others, so one options object can serve any configured name.
 */
export interface ChannelSelectorOptions<T, K = unknown> {
  /** REBALANCE (starting channel) and SHUFFLE (every channel): defaults to `Math.random`. */
  random?: RandomSource;
  /** HASH and CUSTOM: extracts the record's key. Required by both. */
  keySelector?: KeySelector<T, K>;
  /** HASH: the number of key groups, equal to the consumer's max parallelism. Required. */
  maxParallelism?: number;
  /** CUSTOM: the user partitioning function. Required. */
  partitioner?: Partitioner<K>;
}

/**
 * Parses a partitioner name, ignoring case and surrounding whitespace (`" hash "` → `HASH`).
 *
 * @throws IllegalArgumentError naming the value and listing the accepted names.
 */
export function parsePartitionerName(name: string): PartitionerName {
  const normalized = typeof name === "string" ? name.trim().toUpperCase() : undefined;
  const match = PARTITIONER_NAMES.find((candidate) => candidate === normalized);
  if (match === undefined) {
    throw new IllegalArgumentError(
      `unknown partitioner ${describeValue(name)}; accepted names (case-insensitive): ${PARTITIONER_NAMES.join(", ")}`,
    );
  }
  return match;
}

/**
 * Creates a fresh channel selector from a partitioner name, for jobs whose partitioning comes from
 * configuration. Each call returns a new instance; give every record writer its own, since
 * round-robin partitioners keep their position.
 *
 * @param name - one of {@link PARTITIONER_NAMES}, case-insensitive.
 * @param options - what HASH, CUSTOM and the random partitioners need; see {@link ChannelSelectorOptions}.
 * @throws IllegalArgumentError for an unknown name (listing the accepted ones), or when an option the
 *   named partitioner requires is missing (naming the option).
 */
export function createChannelSelector<T, K = unknown>(
  name: string,
  options: ChannelSelectorOptions<T, K> = {},
): StreamPartitioner<T> {
  const parsed = parsePartitionerName(name);
  switch (parsed) {
    case "FORWARD":
      return new ForwardPartitioner<T>();
    case "REBALANCE":
      return new RebalancePartitioner<T>(options.random);
    case "RESCALE":
      return new RescalePartitioner<T>();
    case "SHUFFLE":
      return new ShufflePartitioner<T>(options.random);
    case "BROADCAST":
      return new BroadcastPartitioner<T>();
    case "GLOBAL":
      return new GlobalPartitioner<T>();
    case "HASH":
      return new KeyGroupStreamPartitioner<T, K>(
        required(options.keySelector, "keySelector", parsed),
        required(options.maxParallelism, "maxParallelism", parsed),
      );
    case "CUSTOM":
      return new CustomPartitionerWrapper<T, K>(
        required(options.partitioner, "partitioner", parsed),
        required(options.keySelector, "keySelector", parsed),
      );
  }
}

function required<V>(value: V | undefined, option: string, name: PartitionerName): V {
  if (value === undefined) {
    throw new IllegalArgumentError(`partitioner ${name} requires the option "${option}"`);
  }
  return value;
}
