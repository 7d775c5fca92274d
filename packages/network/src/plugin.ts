/**
 * `@sluice/network/plugin`: what a shuffle plugin built on the network stack imports
 * (docs/api-tiers.md). A plugin on another transport extends {@link NetworkShuffleServiceFactory}
 * and supplies a {@link Transport}; everything else (partitions, gates, credit, the protocol) is
 * this package's. The TLS settings and keep-alive helpers, the reused read buffer and the warning
 * helpers are the pieces the TCP, WebSocket and remote plugins share; the partitions, gates and
 * protocol codec are exported for plugins and test kits that drive them directly.
 */
export {
  type BlockCompressionFactory,
  createBlockCompressionFactory,
} from "./compression/block-compression-factory.js";
export { BufferCompressor } from "./compression/buffer-compressor.js";
export { RemoteInputChannel } from "./consumer/remote-input-channel.js";
export { SingleInputGate } from "./consumer/single-input-gate.js";
export {
  type NetworkResultPartition,
  NetworkShuffleEnvironment,
} from "./environment/network-shuffle-environment.js";
export { NetworkShuffleServiceFactory } from "./environment/network-shuffle-service-factory.js";
export { segmentsForOneChannel } from "./environment/validate-network-shuffle-configuration.js";
export { registerOutputMetrics } from "./metrics/shuffle-metrics.js";
export {
  type DeadlineAfterPoll,
  deadlineAfterPoll,
} from "./netty/transport/deadline-after-poll.js";
export {
  KEEP_ALIVE_PROBE_SECONDS,
  keepAliveDelayFor,
  readKeepAliveDelay,
} from "./netty/transport/keep-alive.js";
export {
  READ_BUFFER_BYTES,
  type ReadHandler,
  ReusedReadBuffer,
} from "./netty/transport/reused-read-buffer.js";
export type {
  ConnectionHandler,
  ConnectOptions,
  ListenOptions,
  Transport,
  TransportConnection,
  TransportServer,
} from "./netty/transport/transport.js";
export { emitTransportWarning, listenerErrorHandler } from "./netty/transport/transport-warning.js";
export { type Crc32, crc32 } from "./partition/crc32.js";
export { PipelinedResultPartition } from "./partition/pipelined-result-partition.js";
export { PipelinedSubpartition } from "./partition/pipelined-subpartition.js";
export { ResultPartitionManager } from "./partition/result-partition-manager.js";
export type { ResultSubpartitionView } from "./partition/result-subpartition-view.js";
export { SortMergeResultPartition } from "./partition/sort-merge-result-partition.js";
export { errorFromErrorResponse } from "./protocol/error-response.js";
export { encodeMessage } from "./protocol/message-encoder.js";
export { MessageId } from "./protocol/message-id.js";
export type {
  BufferResponse,
  ErrorResponse,
  NettyMessage,
  NonBufferMessage,
} from "./protocol/netty-message.js";
export { NettyMessageDecoder } from "./protocol/netty-message-decoder.js";
export { onTlsClientError } from "./security/on-tls-client-error.js";
export {
  checkFingerprint,
  readTlsSettings,
  type TlsSettings,
  tlsClientOptions,
  tlsServerOptions,
} from "./security/tls-settings.js";
