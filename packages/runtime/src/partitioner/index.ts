/**
 * Channel selectors (Flink's stream partitioners) and the key-group math behind keyed routing.
 *
 * @packageDocumentation
 */

export { BroadcastPartitioner } from "./broadcast-partitioner.js";
export type { ChannelSelector } from "./channel-selector.js";
export { CustomPartitionerWrapper, type Partitioner } from "./custom-partitioner-wrapper.js";
export { ForwardPartitioner } from "./forward-partitioner.js";
export { GlobalPartitioner } from "./global-partitioner.js";
export { type Hashable, hashCodeOf } from "./hash-code.js";
export { KeyGroupRange } from "./key-group-range.js";
export {
  assignKeyToParallelOperator,
  assignToKeyGroup,
  computeDefaultMaxParallelism,
  computeKeyGroupForKeyHash,
  computeKeyGroupRangeForOperatorIndex,
  computeOperatorIndexForKeyGroup,
  DEFAULT_LOWER_BOUND_MAX_PARALLELISM,
} from "./key-group-range-assignment.js";
export { KeyGroupStreamPartitioner } from "./key-group-stream-partitioner.js";
export type { KeySelector } from "./key-selector.js";
export { murmurHash } from "./murmur-hash.js";
export {
  type ChannelSelectorOptions,
  createChannelSelector,
  PARTITIONER_NAMES,
  type PartitionerName,
  parsePartitionerName,
} from "./partitioners.js";
export type { RandomSource } from "./random-source.js";
export { RebalancePartitioner } from "./rebalance-partitioner.js";
export { RescalePartitioner } from "./rescale-partitioner.js";
export { ShufflePartitioner } from "./shuffle-partitioner.js";
export { StreamPartitioner } from "./stream-partitioner.js";
