import { atLeast, ConfigOptions, formatMemorySize } from "@sluice/runtime-api";

/**
 * The options of the WebSocket plugin, which only it reads (Sluice-specific: Flink has no
 * WebSocket transport). `WsShuffleServiceFactory.configOptions` declares them, so the runtime
 * knows their keys, checks their values at start-up and documents them.
 */
export const WebSocketOptions = {
  /** permessage-deflate compression. */
  PER_MESSAGE_DEFLATE: ConfigOptions.key("taskmanager.network.websocket.per-message-deflate")
    .booleanType()
    .defaultValue(false)
    .withDescription(
      "Sluice: negotiate the WebSocket permessage-deflate extension. Off by default: it costs " +
        "CPU and memory per connection, and shuffle data is often compressed already.",
    ),

  /** Buffered bytes above which the sender stops writing. */
  HIGH_WATER_MARK: ConfigOptions.key("taskmanager.network.websocket.high-water-mark")
    .memoryType()
    .defaultValue("1mb")
    .withValidator((value) =>
      value >= 1 ? undefined : `a size of at least ${formatMemorySize(1)}`,
    )
    .withDescription(
      "Sluice: when a WebSocket's buffered (not yet sent) bytes exceed this, the transport reports " +
        "itself not writable and the server stops sending buffers on that connection.",
    ),

  /** Buffered bytes below which the sender resumes. */
  LOW_WATER_MARK: ConfigOptions.key("taskmanager.network.websocket.low-water-mark")
    .memoryType()
    .defaultValue("256kb")
    .withDescription(
      "Sluice: once a not-writable WebSocket's buffered bytes drop below this, it is writable " +
        "again. Must be below `taskmanager.network.websocket.high-water-mark`.",
    ),

  /** Time a client has to complete the WebSocket upgrade (Sluice). */
  HANDSHAKE_TIMEOUT: ConfigOptions.key("taskmanager.network.websocket.handshake-timeout")
    .durationType()
    .defaultValue("10s")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "Sluice: the data server drops a connection that has not completed its WebSocket upgrade " +
        "this long after it connected (after the TLS handshake, with wss). Node's HTTP server " +
        "would wait a minute or more for the request headers.",
    ),
} as const;
