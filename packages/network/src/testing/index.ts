/**
 * Builders for tests of code that uses `@sluice/network`: pipelined partitions, input gates and
 * input channels with the defaults a test does not care about (Flink's ResultPartitionBuilder,
 * SingleInputGateBuilder and InputChannelBuilder), and the NetworkBufferPools they draw from.
 * Not for production code.
 *
 * @packageDocumentation
 */
export {
  buildLocalInputChannel,
  buildUnknownInputChannel,
  DEFAULT_TEST_BACKOFF,
  type InputChannelBuilderOptions,
} from "./input-channel-builder.js";
export {
  buildPipelinedResultPartition,
  type PipelinedResultPartitionBuilderOptions,
} from "./result-partition-builder.js";
export {
  buildSingleInputGate,
  type SingleInputGateBuilderOptions,
} from "./single-input-gate-builder.js";
export { TestNetworkBufferPools } from "./test-network-buffer-pools.js";
