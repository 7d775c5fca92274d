import { atLeast, ConfigOptions } from "../config-option.js";

/** The codecs a network shuffle can compress data buffers with. */
export const COMPRESSION_CODECS = ["NONE", "LZ4", "ZSTD"] as const;

/** One of {@link COMPRESSION_CODECS}. */
export type CompressionCodec = (typeof COMPRESSION_CODECS)[number];

/**
 * Options of blocking (batch) partitions and of buffer compression: Flink's keys from
 * `NettyShuffleEnvironmentOptions` and `TaskManagerOptions`, grouped here because they only matter
 * for batch data exchanges.
 */
export const BatchShuffleOptions = {
  /** The codec of compressed data buffers. */
  COMPRESSION_CODEC: ConfigOptions.key("taskmanager.network.compression.codec")
    .enumType(COMPRESSION_CODECS)
    .defaultValue("LZ4")
    .withDescription(
      "Codec that compresses data buffers of blocking partitions: `LZ4` (fast, the default), " +
        "`ZSTD` (smaller, slower) or `NONE` (no compression, as in Flink 2.0). Producers and " +
        "consumers must use the same codec: the wire only says whether a buffer is compressed. " +
        "Flink's `LZO` is not available.",
    ),

  /** Whether blocking partitions compress their data buffers. */
  BATCH_SHUFFLE_COMPRESSION_ENABLED: ConfigOptions.key(
    "taskmanager.network.batch-shuffle.compression.enabled",
  )
    .booleanType()
    .defaultValue(true)
    .withDeprecatedKeys("taskmanager.network.blocking-shuffle.compression.enabled")
    .withDescription(
      "Whether data buffers of blocking partitions are compressed (with " +
        "`taskmanager.network.compression.codec`) before they are written to disk and sent; a " +
        "buffer is kept uncompressed when compression does not make it smaller. Pipelined " +
        "partitions are never compressed (Flink's rule). Flink 1.15-1.20 default; Flink 2.0 " +
        "removed the key and compresses unless the codec is `NONE`.",
    ),

  /** Buffers a sort-merge partition is guaranteed for sorting and writing. */
  SORT_SHUFFLE_MIN_BUFFERS: ConfigOptions.key("taskmanager.network.sort-shuffle.min-buffers")
    .intType()
    .defaultValue(512)
    .withValidator(atLeast(2, "a count"))
    .withDescription(
      "Network buffers a sort-merge blocking partition is guaranteed (its output pool's minimum; " +
        "the maximum is max(this, 4 × subpartitions)). Records are sorted by subpartition in " +
        "these buffers and spilled to disk when they are full, so the producer's network memory " +
        "stays bounded whatever the data size. Larger values mean fewer, larger file regions.",
    ),

  /** Parallelism from which blocking partitions use the sort-merge implementation. */
  SORT_SHUFFLE_MIN_PARALLELISM: ConfigOptions.key(
    "taskmanager.network.sort-shuffle.min-parallelism",
  )
    .intType()
    .defaultValue(1)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Blocking partitions with at least this many subpartitions use the sort-merge shuffle. " +
        "Sluice implements only the sort-merge shuffle (Flink's default since 1.15; Flink 2.0 " +
        "hard-codes 1), so a blocking partition with fewer subpartitions is rejected with " +
        "`SLUICE_ERR_CONFIG` instead of falling back to Flink's hash-based blocking shuffle.",
    ),

  /** Per-worker memory for reading blocking partitions from disk. */
  BATCH_SHUFFLE_READ_MEMORY: ConfigOptions.key(
    "taskmanager.memory.framework.off-heap.batch-shuffle.size",
  )
    .memoryType()
    .defaultValue("64mb")
    .withValidator(atLeast(1, "a size"))
    .withDescription(
      "Memory of a worker for reading blocking partitions from disk: a pool of buffers of " +
        "`taskmanager.memory.segment-size`, separate from the network memory and shared by every " +
        "sort-merge partition of the worker. Allocated when the first blocking partition is " +
        "created; must hold at least one buffer.",
    ),

  /** How long a blocking partition's readers wait for a free read buffer (Sluice). */
  READ_BUFFER_REQUEST_TIMEOUT: ConfigOptions.key(
    "taskmanager.network.batch-shuffle.read-buffer-request-timeout",
  )
    .durationType()
    .defaultValue("5min")
    .withValidator(atLeast(1, "a duration (ms)"))
    .withDescription(
      "Sluice: how long the readers of a blocking partition wait for a buffer of the batch-shuffle " +
        "read memory while none is free. Beyond it they fail with `SLUICE_ERR_TIMEOUT` naming " +
        "`taskmanager.memory.framework.off-heap.batch-shuffle.size`, instead of waiting without " +
        "end when too many partitions are read at once. Flink's read scheduler waits the same " +
        "5 minutes, a constant there.",
    ),
} as const;
