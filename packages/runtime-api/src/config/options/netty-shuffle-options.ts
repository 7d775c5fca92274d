import { MIN_SPILLING_THRESHOLD } from "@sluice/core";
import { atLeast, ConfigOptions, inRange } from "../config-option.js";
import { formatMemorySize } from "../memory-size.js";

/** The largest length any frame or record field can describe: a signed 32-bit int. */
const MAX_INT32 = 2 ** 31 - 1;

/**
 * Options of the network shuffle's transport and protocol (Flink's `NettyShuffleEnvironmentOptions`
 * plus the limits Sluice adds so that nothing unbounded is allocated from a length read off the
 * wire). Used by `@sluice/network` and both bundled plugins.
 */
export const NettyShuffleEnvironmentOptions = {
  /** Port of the data server; 0 picks a free port. */
  DATA_PORT: ConfigOptions.key("taskmanager.data.port")
    .intType()
    .defaultValue(0)
    .withValidator(inRange(0, 65535, "a port number"))
    .withDescription(
      "Port the worker's data server listens on for partition requests; 0 picks a free port " +
        "(returned by `ShuffleEnvironment.start()` and announced in the shuffle descriptors).",
    ),

  /** Address the data server binds to. */
  DATA_BIND_HOST: ConfigOptions.key("taskmanager.data.bind-host")
    .stringType()
    .defaultValue("127.0.0.1")
    .withFallbackKeys("taskmanager.bind-host")
    .withDescription(
      "Local address the data server binds to. Sluice defaults to loopback; use `0.0.0.0` (or a " +
        "specific interface) together with `taskmanager.host` to accept remote workers.",
    ),

  /** Port the data server binds to when it differs from the advertised one. */
  DATA_BIND_PORT: ConfigOptions.key("taskmanager.data.bind-port")
    .intType()
    .noDefaultValue()
    .withValidator(inRange(0, 65535, "a port number"))
    .withDescription(
      "Port the worker's data server binds to, when it differs from the port other workers " +
        "reach it at (behind NAT or a port mapping): the server listens on this port and " +
        "`taskmanager.data.port` is announced in the shuffle descriptors. Unset: the server " +
        "listens on `taskmanager.data.port`.",
    ),

  /** Whether the network shuffle registers its per-gate and per-partition queue metrics. */
  NETWORK_DETAILED_METRICS: ConfigOptions.key("taskmanager.network.detailed-metrics")
    .booleanType()
    .defaultValue(false)
    .withDescription(
      "Registers the detailed queue metrics of every task: for each input gate " +
        "(`Shuffle.Netty.Input.<gate index>`) the total, minimum, maximum and average number of " +
        "buffers queued in its remote channels, and for each result partition " +
        "(`Shuffle.Netty.Output.<partition index>`) the same over its subpartitions " +
        "(`totalQueueLen`, `minQueueLen`, `maxQueueLen`, `avgQueueLen`). Off by default, as in " +
        "Flink: with many channels they are many metrics.",
    ),

  /** First delay before a local channel retries a partition request. */
  NETWORK_REQUEST_BACKOFF_INITIAL: ConfigOptions.key("taskmanager.network.request-backoff.initial")
    .durationType()
    .defaultValue("100ms")
    .withDescription(
      "First delay before a local channel (producer in the same worker) asks again for a " +
        "partition that is not registered yet; the delay doubles per retry up to " +
        "`taskmanager.network.request-backoff.max`, and once a retry after the maximum failed " +
        "too, the channel fails with `SLUICE_ERR_PARTITION_NOT_FOUND` (with the defaults after " +
        "about 23 s). 0 disables local retries. Remote channels do not use it (see " +
        "`taskmanager.network.request-backoff.max`).",
    ),

  /** Largest delay between partition request retries, and the remote channels' retry budget. */
  NETWORK_REQUEST_BACKOFF_MAX: ConfigOptions.key("taskmanager.network.request-backoff.max")
    .durationType()
    .defaultValue("10s")
    .withDescription(
      "Largest backoff between a local channel's partition request retries. A remote channel " +
        'whose request the producer\'s server answered "partition not found" (after waiting ' +
        "`taskmanager.network.partition-request-timeout`) asks the job side whether the " +
        "producer is still coming up and, if it is, asks again at once, as Flink 1.19 does; each " +
        "request counts the partition-request timeout, and once they add up to twice this value " +
        "the channel fails with `SLUICE_ERR_PARTITION_NOT_FOUND` naming the partition (with the " +
        "defaults after 2 requests, about 20 s).",
    ),

  /** Server side: how long a request for a not-yet-registered partition waits. */
  PARTITION_REQUEST_TIMEOUT: ConfigOptions.key("taskmanager.network.partition-request-timeout")
    .durationType()
    .defaultValue("10s")
    .withDescription(
      "How long the producer's server keeps a partition request for a partition that is not yet " +
        'registered before it answers "partition not found". Consumers read it too: each remote ' +
        "request counts this much against the retry budget of twice " +
        "`taskmanager.network.request-backoff.max`, and a server that answered sooner (its " +
        "waiting requests at `taskmanager.network.max-waiting-partition-requests`) is asked " +
        "again only once this time has passed. 0: no waiting, and a remote channel fails on the " +
        "first PartitionNotFound.",
    ),

  /** The first sequence number of every subpartition view (Sluice, for tests). */
  INITIAL_SEQUENCE_NUMBER: ConfigOptions.key("taskmanager.network.initial-sequence-number")
    .intType()
    .defaultValue(0)
    .withValidator(inRange(-(2 ** 31), MAX_INT32, "an int32"))
    .withDescription(
      "Sluice, for tests: the sequence number of the first buffer every subpartition view " +
        "hands out and every remote channel expects (Flink: always 0). Sequence numbers are " +
        "int32s that wrap from 2147483647 to -2147483648, so a test that starts near the top " +
        "crosses the wrap without sending 2^31 buffers. Must be the same on every worker; " +
        "leave it at 0 otherwise.",
    ),

  /** Timeout of establishing a connection to another worker. */
  CLIENT_CONNECT_TIMEOUT: ConfigOptions.key("taskmanager.network.netty.client.connect-timeout")
    .durationType()
    .defaultValue("120s")
    .withDeprecatedKey("taskmanager.network.netty.client.connectTimeoutSec", {
      plainNumberUnit: "s",
    })
    .withDescription(
      "Timeout of establishing a data connection to another worker. Flink's key is " +
        "`taskmanager.network.netty.client.connectTimeoutSec` (seconds), still read as fallback: " +
        "a plain number there means seconds.",
    ),

  /** Connect retries. */
  NETWORK_RETRIES: ConfigOptions.key("taskmanager.network.retries")
    .intType()
    .defaultValue(0)
    .withValidator(atLeast(0, "a count"))
    .withDescription("How often a failed connection attempt to another worker is retried."),

  /** Largest frame accepted from the wire (Sluice). */
  MAX_FRAME_SIZE: ConfigOptions.key("taskmanager.network.max-frame-size")
    .memoryType()
    .defaultValue("64mb")
    .withValidator((value) =>
      value >= 1024 && value <= MAX_INT32
        ? undefined
        : `a size in [1 kb, ${formatMemorySize(MAX_INT32)}]`,
    )
    .withDescription(
      "Sluice: largest frame a decoder accepts. The 4-byte frame length is checked against it " +
        "before anything is allocated; a longer frame fails the connection with " +
        "`SLUICE_ERR_PROTOCOL`. Must exceed the segment size plus the message header.",
    ),

  /** Largest serialized record accepted by the record deserializer (Sluice). */
  MAX_RECORD_SIZE: ConfigOptions.key("taskmanager.network.max-record-size")
    .memoryType()
    .defaultValue("512mb")
    .withValidator((value) =>
      value >= 1 && value <= MAX_INT32
        ? undefined
        : `a size in [1 bytes, ${formatMemorySize(MAX_INT32)}]`,
    )
    .withDescription(
      "Sluice: largest serialized record. A record length read from a buffer is checked against " +
        "it before the deserializer buffers or spills the record, and the writer rejects larger " +
        "records, both with `SLUICE_ERR_RECORD_TOO_LARGE`. Flink has no such limit beyond the " +
        "32-bit length; 512 mb bounds what a corrupt length can make a worker allocate.",
    ),

  /** Record size above which the deserializer spills a spanning record to disk (Sluice). */
  SPILLING_THRESHOLD: ConfigOptions.key("taskmanager.network.spilling-threshold")
    .memoryType()
    .defaultValue("5mb")
    .withValidator((value) =>
      value >= MIN_SPILLING_THRESHOLD
        ? undefined
        : `a size of at least ${formatMemorySize(MIN_SPILLING_THRESHOLD)} (the spilling deserializer's minimum, as Flink's)`,
    )
    .withDescription(
      "Sluice: a record that spans buffers and is larger than this is spilled to a temporary " +
        "file while it is being received, instead of being assembled in memory. Flink hard-codes " +
        "5 mb in its spilling deserializer.",
    ),

  /** Concurrent partition requests one connection may hold (Sluice). */
  MAX_PARTITION_REQUESTS_PER_CONNECTION: ConfigOptions.key(
    "taskmanager.network.max-partition-requests-per-connection",
  )
    .intType()
    .defaultValue(10_000)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Sluice: how many partition requests (subpartition readers) one data connection may have " +
        "open at a time; a further request is answered with an error response. Bounds the state " +
        "a single peer can create on the server.",
    ),

  /** Connections the data server accepts at once (Sluice). */
  MAX_CONNECTIONS: ConfigOptions.key("taskmanager.network.max-connections")
    .intType()
    .defaultValue(1000)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Sluice: how many connections a worker's data server keeps open at once. A further " +
        "connection gets a fatal error response (`SLUICE_ERR_LIMIT_EXCEEDED`) and is closed; the " +
        "consumers that opened it fail with `SLUICE_ERR_REMOTE_TRANSPORT` naming this key. Flink " +
        "opens one connection per pair of workers (and connection index), so this bounds what " +
        "peers that open many connections can make the worker hold.",
    ),

  /** Partition requests that may wait for their partitions at once, per worker (Sluice). */
  MAX_WAITING_PARTITION_REQUESTS: ConfigOptions.key(
    "taskmanager.network.max-waiting-partition-requests",
  )
    .intType()
    .defaultValue(10_000)
    .withValidator(atLeast(0, "a count"))
    .withDescription(
      "Sluice: how many partition requests for partitions that are not registered yet a worker " +
        "keeps waiting (up to `taskmanager.network.partition-request-timeout`) at once, over all " +
        'connections. Beyond it a request is answered "partition not found" at once, as Flink ' +
        "did before requests could wait, and the consumer asks again once its " +
        "`taskmanager.network.partition-request-timeout` has passed. 0 never waits.",
    ),

  /** Whether a consumer keeps a connection for the next job's channels (Flink 1.15+). */
  TCP_CONNECTION_REUSE_ACROSS_JOBS: ConfigOptions.key(
    "taskmanager.network.tcp-connection.enable-reuse-across-jobs",
  )
    .booleanType()
    .defaultValue(true)
    .withDescription(
      "Whether a connection to another worker's data server (one per worker and connection " +
        "index) stays open when its last channel is released, so that " +
        "the channels of the next job to that worker use it without connecting again " +
        "(FLINK-15455); each job's channels are multiplexed on it. Sluice closes such an idle " +
        "connection after half of `taskmanager.network.idle-connection-timeout`, before the peer's " +
        "data server would close it. `false` closes it as soon as its last channel is released.",
    ),

  /** Idle timeout of data connections without partition requests (Sluice). */
  IDLE_CONNECTION_TIMEOUT: ConfigOptions.key("taskmanager.network.idle-connection-timeout")
    .durationType()
    .defaultValue("1min")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "Sluice: the data server closes a connection that has no partition request and sent " +
        "nothing for this long (with a fatal `SLUICE_ERR_TIMEOUT` error response). Consumers " +
        "close a connection themselves when their last channel on it is released, at once or, " +
        "reused across jobs (`taskmanager.network.tcp-connection.enable-reuse-across-jobs`), " +
        "after half of this timeout, so only stray or hostile connections reach it.",
    ),

  /** How long a frame that started arriving may take to complete (Sluice). */
  FRAME_READ_TIMEOUT: ConfigOptions.key("taskmanager.network.frame-read-timeout")
    .durationType()
    .defaultValue("30s")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "Sluice: once the first bytes of a frame from a consumer arrived, the rest must arrive " +
        "within this time, or the data server closes the connection (fatal `SLUICE_ERR_TIMEOUT` " +
        "error response). Consumers send only small control frames, so only a stalled or hostile " +
        "peer reaches it. Time while the server itself stopped reading does not count, nor a stall of " +
        "its own event loop: a deadline found passed is looked at again once what waits in the socket was read.",
    ),

  /** Bytes the data server holds for one connection whose peer does not read (Sluice). */
  MAX_OUTBOUND_BYTES_PER_CONNECTION: ConfigOptions.key(
    "taskmanager.network.max-outbound-bytes-per-connection",
  )
    .memoryType()
    .defaultValue("1mb")
    .withValidator((value) =>
      value >= 64 * 1024 ? undefined : `a size of at least ${formatMemorySize(64 * 1024)}`,
    )
    .withDescription(
      "Sluice: the outbound budget of one data connection: control messages queued for the " +
        "peer (error responses, backlog announcements) plus bytes written and not yet taken by " +
        "the socket. Data buffers are sent only against credit and while the connection is " +
        "writable. At the budget the server stops reading from that peer until it drained to " +
        "half; control messages beyond twice the budget close the connection " +
        "(`SLUICE_ERR_LIMIT_EXCEEDED`).",
    ),
} as const;
