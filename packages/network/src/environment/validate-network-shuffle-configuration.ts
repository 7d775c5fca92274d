import { ConfigurationError } from "@sluice/core";
import {
  formatMemorySize,
  NettyShuffleEnvironmentOptions,
  NetworkMemoryOptions,
} from "@sluice/runtime-api";
import { BUFFER_RESPONSE_HEADER_LENGTH } from "../protocol/index.js";
import type { NetworkShuffleEnvironmentConfiguration } from "./network-shuffle-environment-configuration.js";

const M = NetworkMemoryOptions;
const N = NettyShuffleEnvironmentOptions;

/** Where the network memory size came from, for the message that names it. */
export interface NetworkMemorySource {
  /**
   * True when the worker passed the size in `ShuffleEnvironmentContext.networkMemorySize`
   * instead of `taskmanager.memory.network.min`.
   */
  readonly networkMemoryFromContext: boolean;
}

/**
 * The segments one channel needs from a worker: the output pool of a one-subpartition
 * partition (subpartitions + 1) and an input gate with one remote channel (its exclusive
 * buffers plus the gate's one required floating buffer).
 */
export function segmentsForOneChannel(buffersPerChannel: number): number {
  return 2 + buffersPerChannel + 1;
}

/**
 * Checks that the settings of a network shuffle fit together, so that a worker that could not
 * serve a single channel refuses to start instead of failing later at deploy time (or hanging).
 * Each error is a ConfigurationError (`SLUICE_ERR_CONFIG`) that names every key involved, their
 * values and what would be enough. Called by NetworkShuffleEnvironment's constructor.
 *
 * - A BufferResponse carrying one full segment must fit `taskmanager.network.max-frame-size`.
 * - The network memory must give at least the segments of one producer subpartition and one
 *   remote input channel ({@link segmentsForOneChannel}).
 * - An input gate needs one floating buffer beyond its channels' exclusive buffers (Flink's gate
 *   formula), so `floating-buffers-per-gate` 0 cannot work — with `buffers-per-channel` 0 a
 *   gate would have no buffer at all.
 * - `taskmanager.memory.min-segment-size` (the smallest buffer a consumer may ask for) must not
 *   exceed the segment size.
 */
export function validateNetworkShuffleConfiguration(
  settings: NetworkShuffleEnvironmentConfiguration,
  source: NetworkMemorySource = { networkMemoryFromContext: false },
): void {
  const problems: string[] = [];
  const segment = formatMemorySize(settings.segmentSize);
  const frameNeeded = settings.segmentSize + BUFFER_RESPONSE_HEADER_LENGTH;
  if (settings.maxFrameSize < frameNeeded) {
    problems.push(
      `'${N.MAX_FRAME_SIZE.key}' (${formatMemorySize(settings.maxFrameSize)}) cannot carry one ` +
        `buffer of '${M.MEMORY_SEGMENT_SIZE.key}' (${segment}): a BufferResponse of a full ` +
        `buffer is ${frameNeeded} bytes; raise it to at least ${formatMemorySize(frameNeeded)} or ` +
        "lower the segment size",
    );
  }
  if (settings.floatingBuffersPerGate < 1) {
    problems.push(
      settings.buffersPerChannel === 0
        ? `'${M.NETWORK_BUFFERS_PER_CHANNEL.key}' = 0 and '${M.NETWORK_EXTRA_BUFFERS_PER_GATE.key}' = 0 ` +
            "leave an input gate no buffer to receive into; keep the exclusive buffers at 0 (Flink's " +
            `mode for large batch jobs) only with '${M.NETWORK_EXTRA_BUFFERS_PER_GATE.key}' >= 1`
        : `'${M.NETWORK_EXTRA_BUFFERS_PER_GATE.key}' = 0: an input gate needs one floating buffer ` +
            `beyond the exclusive buffers of its channels ('${M.NETWORK_BUFFERS_PER_CHANNEL.key}' = ` +
            `${settings.buffersPerChannel}); set it to at least 1`,
    );
  }
  if (settings.minSegmentSize > settings.segmentSize) {
    problems.push(
      `'${M.MIN_MEMORY_SEGMENT_SIZE.key}' (${formatMemorySize(settings.minSegmentSize)}) exceeds ` +
        `'${M.MEMORY_SEGMENT_SIZE.key}' (${segment})`,
    );
  }
  const segments = Math.floor(settings.networkMemoryBytes / settings.segmentSize);
  const needed = segmentsForOneChannel(settings.buffersPerChannel);
  if (segments < needed) {
    const memory = source.networkMemoryFromContext
      ? `the worker's network memory (${formatMemorySize(settings.networkMemoryBytes)})`
      : `'${M.NETWORK_MEMORY_MIN.key}' (${formatMemorySize(settings.networkMemoryBytes)})`;
    problems.push(
      `${memory} gives ${segments} network buffers of '${M.MEMORY_SEGMENT_SIZE.key}' (${segment}), ` +
        `but one channel needs ${needed}: 2 for a one-subpartition output pool and ` +
        `${settings.buffersPerChannel + 1} for an input gate with one remote channel ` +
        `('${M.NETWORK_BUFFERS_PER_CHANNEL.key}' = ${settings.buffersPerChannel}, plus one floating); ` +
        `raise it to at least ${formatMemorySize(needed * settings.segmentSize)}`,
    );
  }
  if (problems.length === 1) {
    throw new ConfigurationError(`Invalid network configuration: ${problems[0]}.`);
  }
  if (problems.length > 1) {
    throw new ConfigurationError(
      `Invalid network configuration:\n${problems.map((p) => `- ${p}`).join("\n")}`,
    );
  }
}
