import {
  BatchShuffleOptions,
  type CompressionCodec,
  ExecutionOptions,
  NettyShuffleEnvironmentOptions,
  NetworkMemoryOptions,
  type ReadableConfig,
  TaskManagerOptions,
} from "@sluice/runtime-api";

/**
 * The settings of a NetworkShuffleEnvironment, read once from the configuration (Flink's
 * NettyShuffleEnvironmentConfiguration). Plain numbers so the hot paths never touch the config.
 */
export interface NetworkShuffleEnvironmentConfiguration {
  readonly networkMemoryBytes: number;
  readonly segmentSize: number;
  /** Smallest buffer a consumer may ask for with NewBufferSize (`min-segment-size`). */
  readonly minSegmentSize: number;
  readonly buffersPerChannel: number;
  readonly floatingBuffersPerGate: number;
  readonly maxBuffersPerChannel: number;
  /** Gates and output pools take fewer buffers instead of failing when memory is short. */
  readonly exclusiveBuffersFallback: boolean;
  readonly maxOverdraftBuffersPerGate: number;
  /** Undefined = unlimited for pipelined gates. */
  readonly maxRequiredBuffersPerGate: number | undefined;
  /** How long exclusive buffers may wait for other pools to return segments. */
  readonly buffersRequestTimeoutMs: number;
  readonly requestBackoffInitialMs: number;
  readonly requestBackoffMaxMs: number;
  readonly partitionRequestTimeoutMs: number;
  /** The first sequence number of every subpartition view and remote channel (tests only). */
  readonly initialSequenceNumber: number;
  readonly connectTimeoutMs: number;
  readonly retries: number;
  readonly maxFrameSize: number;
  readonly maxRecordSize: number;
  readonly maxPartitionRequestsPerConnection: number;
  readonly maxConnections: number;
  readonly maxWaitingPartitionRequests: number;
  readonly idleConnectionTimeoutMs: number;
  /** `taskmanager.network.detailed-metrics`: per-gate and per-partition queue lengths. */
  readonly detailedMetrics: boolean;
  /** Connections stay open for the next job's channels (for half the idle timeout). */
  readonly reuseConnectionsAcrossJobs: boolean;
  readonly frameReadTimeoutMs: number;
  readonly maxOutboundBytesPerConnection: number;
  readonly bindHost: string;
  readonly dataPort: number;
  readonly bufferTimeoutMs: number;
  /**
   * The codec of blocking partitions' data buffers, `NONE` when compression is off
   * (`taskmanager.network.batch-shuffle.compression.enabled: false` or the codec `NONE`).
   */
  readonly compressionCodec: CompressionCodec;
  readonly sortShuffleMinBuffers: number;
  readonly sortShuffleMinParallelism: number;
  /** Bytes of the worker's batch-shuffle read buffer pool. */
  readonly batchShuffleReadMemoryBytes: number;
  /** How long readers wait for a free read buffer before they fail (ms). */
  readonly readBufferRequestTimeoutMs: number;
  /** `io.tmp.dirs` split at `,` (empty when unset). */
  readonly tmpDirs: readonly string[];
  /** Buffer debloating of input gates; undefined when it is off. */
  readonly bufferDebloat: BufferDebloatConfiguration | undefined;
}

/** The `taskmanager.network.memory.buffer-debloat.*` settings, when debloating is on. */
export interface BufferDebloatConfiguration {
  /** How long the in-flight data of a gate should take to consume (ms). */
  readonly targetMillis: number;
  /** The moving average's number of samples. */
  readonly samples: number;
  /** The smallest change of the buffer size worth announcing, in percent. */
  readonly thresholdPercentages: number;
}

/**
 * Reads the environment settings; `networkMemoryBytes` > 0 overrides the configured minimum.
 * Each value is checked on its own here (ConfigurationError naming the key); whether they fit
 * together is `validateNetworkShuffleConfiguration`'s job.
 */
export function readNetworkShuffleEnvironmentConfiguration(
  config: ReadableConfig,
  networkMemoryBytes = 0,
): NetworkShuffleEnvironmentConfiguration {
  const N = NettyShuffleEnvironmentOptions;
  const M = NetworkMemoryOptions;
  const B = BatchShuffleOptions;
  return {
    networkMemoryBytes:
      networkMemoryBytes > 0 ? networkMemoryBytes : config.get(M.NETWORK_MEMORY_MIN),
    segmentSize: config.get(M.MEMORY_SEGMENT_SIZE),
    minSegmentSize: config.get(M.MIN_MEMORY_SEGMENT_SIZE),
    buffersPerChannel: config.get(M.NETWORK_BUFFERS_PER_CHANNEL),
    floatingBuffersPerGate: config.get(M.NETWORK_EXTRA_BUFFERS_PER_GATE),
    maxBuffersPerChannel: config.get(M.NETWORK_MAX_BUFFERS_PER_CHANNEL),
    exclusiveBuffersFallback: config.get(M.NETWORK_EXCLUSIVE_BUFFERS_FALLBACK),
    maxOverdraftBuffersPerGate: config.get(M.NETWORK_MAX_OVERDRAFT_BUFFERS_PER_GATE),
    maxRequiredBuffersPerGate: config.getOptional(M.NETWORK_READ_MAX_REQUIRED_BUFFERS_PER_GATE),
    buffersRequestTimeoutMs: config.get(M.NETWORK_BUFFERS_REQUEST_TIMEOUT),
    requestBackoffInitialMs: config.get(N.NETWORK_REQUEST_BACKOFF_INITIAL),
    requestBackoffMaxMs: config.get(N.NETWORK_REQUEST_BACKOFF_MAX),
    partitionRequestTimeoutMs: config.get(N.PARTITION_REQUEST_TIMEOUT),
    initialSequenceNumber: config.get(N.INITIAL_SEQUENCE_NUMBER),
    connectTimeoutMs: config.get(N.CLIENT_CONNECT_TIMEOUT),
    retries: config.get(N.NETWORK_RETRIES),
    maxFrameSize: config.get(N.MAX_FRAME_SIZE),
    maxRecordSize: config.get(N.MAX_RECORD_SIZE),
    maxPartitionRequestsPerConnection: config.get(N.MAX_PARTITION_REQUESTS_PER_CONNECTION),
    maxConnections: config.get(N.MAX_CONNECTIONS),
    maxWaitingPartitionRequests: config.get(N.MAX_WAITING_PARTITION_REQUESTS),
    idleConnectionTimeoutMs: config.get(N.IDLE_CONNECTION_TIMEOUT),
    detailedMetrics: config.get(N.NETWORK_DETAILED_METRICS),
    reuseConnectionsAcrossJobs: config.get(N.TCP_CONNECTION_REUSE_ACROSS_JOBS),
    frameReadTimeoutMs: config.get(N.FRAME_READ_TIMEOUT),
    maxOutboundBytesPerConnection: config.get(N.MAX_OUTBOUND_BYTES_PER_CONNECTION),
    bindHost: config.get(N.DATA_BIND_HOST),
    dataPort: config.get(N.DATA_PORT),
    bufferTimeoutMs: config.get(ExecutionOptions.BUFFER_TIMEOUT_INTERVAL),
    compressionCodec: config.get(B.BATCH_SHUFFLE_COMPRESSION_ENABLED)
      ? config.get(B.COMPRESSION_CODEC)
      : "NONE",
    sortShuffleMinBuffers: config.get(B.SORT_SHUFFLE_MIN_BUFFERS),
    sortShuffleMinParallelism: config.get(B.SORT_SHUFFLE_MIN_PARALLELISM),
    batchShuffleReadMemoryBytes: config.get(B.BATCH_SHUFFLE_READ_MEMORY),
    readBufferRequestTimeoutMs: config.get(B.READ_BUFFER_REQUEST_TIMEOUT),
    tmpDirs: (config.getOptional(TaskManagerOptions.TMP_DIRS) ?? "")
      .split(",")
      .map((dir) => dir.trim())
      .filter((dir) => dir.length > 0),
    bufferDebloat: config.get(M.BUFFER_DEBLOAT_ENABLED)
      ? {
          targetMillis: config.get(M.BUFFER_DEBLOAT_TARGET),
          samples: config.get(M.BUFFER_DEBLOAT_SAMPLES),
          thresholdPercentages: config.get(M.BUFFER_DEBLOAT_THRESHOLD_PERCENTAGES),
        }
      : undefined,
  };
}
