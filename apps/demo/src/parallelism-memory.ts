import { ConfigurationError } from "@sluice/core";
import {
  NettyShuffleEnvironmentOptions,
  NetworkMemoryOptions,
  type ReadableConfig,
  TaskManagerOptions,
} from "@sluice/runtime-api";

/**
 * The most buffers a pool that falls back for lack of network memory is guaranteed: 8 (an
 * output pool's fallback and `floating-buffers-per-gate`'s default), and the network shuffle
 * keeps half the memory from full guarantees for such pools.
 */
const FALLBACK_BUFFERS_PER_POOL = 8;

/**
 * Refuses a streaming run whose parallelism the task managers' network memory (or the limit of
 * partition requests per connection) cannot serve, saying how much it needs, instead of a task failing with InsufficientBuffersError part-way
 * through the deployment. Each task manager runs ceil(p / n) sources (an output pool of p
 * subpartitions) and as many counters (a gate of p channels). A run fits when every pool gets
 * its full buffers, or, with `taskmanager.network.memory.exclusive-buffers-fallback`, when
 * the pools' fallback guarantees fit in half the memory. The check applies only when the
 * network memory is the configured minimum (no total memory to take a fraction of), as in the
 * demo's own task managers.
 *
 * @throws ConfigurationError naming the parallelism, the memory and the keys to raise.
 */
export function checkParallelismFitsNetworkMemory(
  configuration: ReadableConfig,
  parallelism: number,
  taskManagers: number,
): void {
  const perTaskManager = Math.ceil(parallelism / taskManagers);
  // Every counter on one task manager reads every source on another through one connection.
  const requestsPerConnection = perTaskManager * perTaskManager;
  const maxRequests = NettyShuffleEnvironmentOptions.MAX_PARTITION_REQUESTS_PER_CONNECTION;
  if (taskManagers > 1 && requestsPerConnection > configuration.get(maxRequests)) {
    throw new ConfigurationError(
      `--parallelism ${parallelism} on ${taskManagers} task managers makes ` +
        `${requestsPerConnection} partition requests on each connection between two task ` +
        `managers, more than '${maxRequests.key}' (${configuration.get(maxRequests)}) allows: ` +
        `use more --task-managers, raise that key, or lower --parallelism.`,
    );
  }
  if (configuration.getOptional(TaskManagerOptions.TOTAL_FLINK_MEMORY) !== undefined) return;
  const memory = configuration.get(NetworkMemoryOptions.NETWORK_MEMORY_MIN);
  const segment = configuration.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE);
  const buffers = Math.floor(memory / segment);
  const bpc = configuration.get(NetworkMemoryOptions.NETWORK_BUFFERS_PER_CHANNEL);
  const remoteChannels = parallelism - perTaskManager;
  const full = perTaskManager * (parallelism + 1 + remoteChannels * bpc + 1);
  if (full <= buffers) return;
  const fallback = configuration.get(NetworkMemoryOptions.NETWORK_EXCLUSIVE_BUFFERS_FALLBACK);
  const neededBuffers = fallback ? 2 * perTaskManager * 2 * FALLBACK_BUFFERS_PER_POOL : full;
  if (neededBuffers <= buffers) return;
  const mib = Math.ceil((neededBuffers * segment) / 1024 ** 2);
  throw new ConfigurationError(
    `--parallelism ${parallelism} on ${taskManagers} task managers needs at least ${mib} MiB of ` +
      `network memory per task manager (each runs ${perTaskManager} sources and ${perTaskManager} ` +
      `counters${fallback ? ", each pool with up to 8 buffers when memory is short" : ""}), ` +
      `but has ${Math.floor(memory / 1024 ** 2)} MiB (${buffers} buffers of ${segment} bytes). ` +
      `Raise it (-D ${NetworkMemoryOptions.NETWORK_MEMORY_MIN.key}=${mib}mb ` +
      `-D ${NetworkMemoryOptions.NETWORK_MEMORY_MAX.key}=${mib}mb), use more --task-managers, ` +
      `or lower --parallelism.`,
  );
}
