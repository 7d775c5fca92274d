import { ConfigurationError } from "@sluice/core";
import { NetworkMemoryOptions, type ReadableConfig, TaskManagerOptions } from "@sluice/runtime-api";

/** How a worker's network memory was sized, for logs and error messages. */
export interface NetworkMemorySize {
  /** Bytes of network memory: the size of the worker's NetworkBufferPool. */
  readonly bytes: number;
  /** One sentence on how `bytes` follows from the configuration. */
  readonly derivation: string;
}

const MIN = NetworkMemoryOptions.NETWORK_MEMORY_MIN;
const MAX = NetworkMemoryOptions.NETWORK_MEMORY_MAX;
const FRACTION = NetworkMemoryOptions.NETWORK_MEMORY_FRACTION;

/**
 * Derives a worker's network memory as Flink's TaskExecutor does: the
 * `taskmanager.memory.network.fraction` share of the worker's total memory, clamped to
 * [`taskmanager.memory.network.min`, `taskmanager.memory.network.max`]. The total memory is
 * `totalMemory` when given, else `taskmanager.memory.flink.size`; with neither, there is no base
 * for the fraction and the network memory is the minimum (Flink's own default when min = max).
 *
 * @param totalMemory - the worker's total memory budget in bytes (e.g. a container's limit).
 * @throws ConfigurationError naming the keys when max < min or the total memory is not positive.
 */
export function deriveNetworkMemorySize(
  configuration: ReadableConfig,
  totalMemory?: number,
): NetworkMemorySize {
  const min = configuration.get(MIN);
  const max = configuration.getOptional(MAX) ?? Number.POSITIVE_INFINITY;
  if (max < min) {
    throw new ConfigurationError(
      `${MAX.key} (${max} bytes) must not be smaller than ${MIN.key} (${min} bytes)`,
    );
  }
  const total = totalMemory ?? configuration.getOptional(TaskManagerOptions.TOTAL_FLINK_MEMORY);
  if (total === undefined) {
    return {
      bytes: min,
      derivation: `${MIN.key} (no total memory: neither ${TaskManagerOptions.TOTAL_FLINK_MEMORY.key} nor a total given to the TaskExecutor)`,
    };
  }
  if (!Number.isFinite(total) || total <= 0) {
    throw new ConfigurationError(
      `the worker's total memory must be a positive number of bytes, got ${total} (${TaskManagerOptions.TOTAL_FLINK_MEMORY.key} or TaskExecutor.start's totalMemory)`,
    );
  }
  const fraction = configuration.get(FRACTION);
  const share = Math.floor(total * fraction);
  const bytes = Math.min(max, Math.max(min, share));
  const clamp =
    bytes === share ? "" : bytes === min ? `, raised to ${MIN.key}` : `, cut to ${MAX.key}`;
  return {
    bytes,
    derivation: `${FRACTION.key} ${fraction} of ${total} bytes total memory${clamp}`,
  };
}
