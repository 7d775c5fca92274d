import { atLeast, ConfigOptions, formatMemorySize } from "@sluice/runtime-api";

/**
 * The options of `@sluice/shuffle-remote`. The names follow flink-remote-shuffle's
 * (`remote-shuffle.manager.*` for the shuffle manager the job side runs, `remote-shuffle.worker.*`
 * for the shuffle workers, `remote-shuffle.job.*` for the clients in task managers); the memory
 * defaults are those of Celeborn's Flink plugin.
 */
export const RemoteShuffleOptions = {
  MANAGER_ADDRESS: ConfigOptions.key("remote-shuffle.manager.rpc-address")
    .stringType()
    .defaultValue("127.0.0.1")
    .withDescription(
      "Host of the shuffle manager (run by the job manager's ShuffleMaster) that shuffle workers register with; the manager binds to it.",
    ),
  MANAGER_PORT: ConfigOptions.key("remote-shuffle.manager.rpc-port")
    .intType()
    .defaultValue(23123)
    .withValidator((port) =>
      Number.isInteger(port) && port >= 0 && port <= 65535 ? undefined : "a port in [0, 65535]",
    )
    .withDescription(
      "Port of the shuffle manager; 0 takes any free port (the workers the manager starts itself are told which).",
    ),
  EMBEDDED_WORKERS: ConfigOptions.key("remote-shuffle.manager.embedded-workers")
    .intType()
    .defaultValue(0)
    .withValidator((count) =>
      Number.isInteger(count) && count >= 0 && count <= 64 ? undefined : "an integer in [0, 64]",
    )
    .withDescription(
      "Shuffle worker processes the ShuffleMaster starts next to itself (child processes, stopped with it); 0 = workers are started separately (`sluice-shuffle-worker`).",
    ),
  WORKER_REGISTRATION_TIMEOUT: ConfigOptions.key(
    "remote-shuffle.manager.worker-registration-timeout",
  )
    .durationType()
    .defaultValue("30s")
    .withDescription(
      "How long the ShuffleMaster waits for its embedded workers to register at start, and how long a partition waits for a first worker when none is registered.",
    ),
  MAX_RECOVERY_TIME: ConfigOptions.key("remote-shuffle.worker.max-recovery-time")
    .durationType()
    .defaultValue("3min")
    .withDescription(
      "The grace window of a lost shuffle worker: when it registers again with the same incarnation within it, its partitions are kept; otherwise they are reported lost to the job so their producers run again. A worker that comes back as a new incarnation loses its partitions at once.",
    ),
  HEARTBEAT_INTERVAL: ConfigOptions.key("remote-shuffle.worker.heartbeat-interval")
    .durationType()
    .defaultValue("1s")
    .withDescription("How often a shuffle worker sends a heartbeat to the shuffle manager."),
  HEARTBEAT_TIMEOUT: ConfigOptions.key("remote-shuffle.worker.heartbeat-timeout")
    .durationType()
    .defaultValue("10s")
    .withDescription(
      "A worker whose heartbeats stop for this long is lost (its grace window starts), as is one whose connection to the manager closes. Heartbeats that reached the manager while its event loop was stalled count: it judges only after reading them.",
    ),
  WORKER_HOST: ConfigOptions.key("remote-shuffle.worker.host")
    .stringType()
    .defaultValue("127.0.0.1")
    .withDescription(
      "The address producers and consumers reach a shuffle worker at; the worker binds to it.",
    ),
  WORKER_RPC_PORT: ConfigOptions.key("remote-shuffle.worker.rpc-port")
    .intType()
    .defaultValue(0)
    .withValidator((port) =>
      Number.isInteger(port) && port >= 0 && port <= 65535 ? undefined : "a port in [0, 65535]",
    )
    .withDescription(
      "Port a shuffle worker receives pushed partitions and checksum queries on; 0 = any free port.",
    ),
  WORKER_DATA_PORT: ConfigOptions.key("remote-shuffle.worker.data-port")
    .intType()
    .defaultValue(0)
    .withValidator((port) =>
      Number.isInteger(port) && port >= 0 && port <= 65535 ? undefined : "a port in [0, 65535]",
    )
    .withDescription(
      "Port a shuffle worker serves stored partitions on, with the network shuffle's credit-based protocol; 0 = any free port.",
    ),
  WORKER_WRITING_MEMORY: ConfigOptions.key("remote-shuffle.worker.memory.writing-size")
    .memoryType()
    .defaultValue("64mb")
    .withDescription(
      "Memory of a shuffle worker for the sort buffers of the partitions being pushed to it (its network memory). Each partition being written takes `taskmanager.network.sort-shuffle.min-buffers` segments of it.",
    ),
  WORKER_READING_MEMORY: ConfigOptions.key("remote-shuffle.worker.memory.reading-size")
    .memoryType()
    .defaultValue("32mb")
    .withDescription(
      "Memory of a shuffle worker for reading stored partitions to their consumers, shared by all readers.",
    ),
  WORKER_RECEIVING_MEMORY_PER_PARTITION: ConfigOptions.key(
    "remote-shuffle.worker.memory.receiving-size-per-partition",
  )
    .memoryType()
    .defaultValue("8mb")
    .withValidator((bytes) => (bytes >= 64 * 1024 ? undefined : "at least 64kb"))
    .withDescription(
      "Bytes of pushed data a shuffle worker holds for one partition while that partition writes a spill to disk, so that the producer's data keeps arriving meanwhile; beyond it the worker stops reading the producer's connection until the spill completed. A partition being pushed takes at most this on top of its sort buffers.",
    ),
  WORKER_PUSH_SESSION_IDLE_TIMEOUT: ConfigOptions.key(
    "remote-shuffle.worker.push-session.idle-timeout",
  )
    .durationType()
    .defaultValue("1min")
    .withValidator(atLeast(3, "a duration"))
    .withDescription(
      "Sluice: a push session whose producer sent nothing for this long (time the worker itself stopped reading it does not count) is ended with `SLUICE_ERR_TIMEOUT`, its sort buffers go back and its partial data is deleted. Producers send a keep-alive after a third of it (the worker tells them the value). A push that waits twice this long for sort buffers (every idle session has ended by then: only live producers hold them) fails with `SLUICE_ERR_INSUFFICIENT_BUFFERS`.",
    ),
  WORKER_MAX_PUSH_SESSIONS_PER_PEER: ConfigOptions.key(
    "remote-shuffle.worker.max-push-sessions-per-peer",
  )
    .intType()
    .defaultValue(64)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Sluice: push sessions one peer host may have on a shuffle worker at once, open or waiting for sort buffers; a further OPEN is refused with `SLUICE_ERR_LIMIT_EXCEEDED`. Sessions waiting for sort buffers are admitted fairly: the next one goes to the peer holding the fewest, so no producer host is starved by another.",
    ),
  RPC_MAX_MESSAGE_SIZE: ConfigOptions.key("remote-shuffle.rpc.max-message-size")
    .memoryType()
    .defaultValue("64kb")
    .withValidator((bytes) =>
      bytes >= 16 * 1024 && bytes <= 16 * 1024 * 1024
        ? undefined
        : `a size in [${formatMemorySize(16 * 1024)}, ${formatMemorySize(16 * 1024 * 1024)}]`,
    )
    .withDescription(
      "Sluice: the largest frame of the remote shuffle's own protocol on the shuffle manager's port, and on a shuffle worker's port before a push session is open and on checksum queries. The length is checked before anything is allocated: a longer frame is refused with `SLUICE_ERR_PROTOCOL` and its connection closed. The frames of an open push session may hold one record, up to `taskmanager.network.max-record-size`.",
    ),
  RPC_MAX_CONNECTIONS: ConfigOptions.key("remote-shuffle.rpc.max-connections")
    .intType()
    .defaultValue(1000)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Sluice: connections the shuffle manager's port, and each shuffle worker's port, keep open at once. A further connection gets `SLUICE_ERR_LIMIT_EXCEEDED` and is closed; open ones are not affected.",
    ),
  RPC_IDLE_CONNECTION_TIMEOUT: ConfigOptions.key("remote-shuffle.rpc.idle-connection-timeout")
    .durationType()
    .defaultValue("30s")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "Sluice: a connection to the shuffle manager that has not registered a worker within this time, and a connection to a shuffle worker that opened no push session and asked no checksum query for this long, is closed with `SLUICE_ERR_TIMEOUT`. Task managers close their own idle checksum connections after half of it.",
    ),
  RPC_FRAME_READ_TIMEOUT: ConfigOptions.key("remote-shuffle.rpc.frame-read-timeout")
    .durationType()
    .defaultValue("30s")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "Sluice: once the first bytes of a frame arrived on the shuffle manager's or a shuffle worker's port, the rest must arrive within this time, or the connection is closed with `SLUICE_ERR_TIMEOUT`. Time while the receiver itself stopped reading does not count, nor a stall of its own event loop: a deadline found passed is looked at again once what waits in the socket was read.",
    ),
  RPC_MAX_OUTBOUND_BYTES_PER_CONNECTION: ConfigOptions.key(
    "remote-shuffle.rpc.max-outbound-bytes-per-connection",
  )
    .memoryType()
    .defaultValue("1mb")
    .withValidator((bytes) =>
      bytes >= 64 * 1024 ? undefined : `a size of at least ${formatMemorySize(64 * 1024)}`,
    )
    .withDescription(
      "Sluice: replies the shuffle manager or a shuffle worker holds for one connection whose peer does not take them. At the budget it stops reading from that peer until half of it drained; beyond twice the budget it closes the connection (`SLUICE_ERR_LIMIT_EXCEEDED`).",
    ),
  MEMORY_PER_PARTITION: ConfigOptions.key("remote-shuffle.job.memory-per-partition")
    .memoryType()
    .defaultValue("64mb")
    .withDescription(
      "The most bytes of one result partition a producer buffers or has in flight to its shuffle worker (the worker's credit); beyond it the producer is back-pressured.",
    ),
} as const;
