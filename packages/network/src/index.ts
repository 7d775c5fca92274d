/**
 * @sluice/network: the transport-neutral network shuffle. Pipelined result partitions and their
 * subpartition queues, input gates with local and remote channels, the credit-based protocol
 * (codec, server queue, client handler) and the NetworkShuffleEnvironment / NetworkShuffleMaster
 * that the TCP and WebSocket plugins share. A plugin supplies only a {@link Transport}.
 */

// Consumer side
export { BufferManager } from "./consumer/buffer-manager.js";
export {
  type Backoff,
  type BufferAndAvailability,
  InputChannel,
  type InputChannelOwner,
} from "./consumer/input-channel.js";
export { LocalInputChannel } from "./consumer/local-input-channel.js";
export { RemoteInputChannel } from "./consumer/remote-input-channel.js";
export { SingleInputGate, type SingleInputGateOptions } from "./consumer/single-input-gate.js";
export { UnknownInputChannel } from "./consumer/unknown-input-channel.js";
// Environment, master, factory
export {
  createGateBuffersSpec,
  type GateBuffersSpec,
  outputPoolSize,
} from "./environment/gate-buffers-spec.js";
export { NetworkShuffleEnvironment } from "./environment/network-shuffle-environment.js";
export {
  type NetworkShuffleEnvironmentConfiguration,
  readNetworkShuffleEnvironmentConfiguration,
} from "./environment/network-shuffle-environment-configuration.js";
export { NetworkShuffleMaster } from "./environment/network-shuffle-master.js";
export {
  LocalShuffleServiceFactory,
  NetworkShuffleServiceFactory,
} from "./environment/network-shuffle-service-factory.js";
// Metrics (Flink's names)
export {
  registerEnvironmentMetrics,
  registerInputMetrics,
  registerOutputMetrics,
} from "./metrics/shuffle-metrics.js";
// Client / server and the transport seam
export { ConnectionID } from "./netty/connection-id.js";
export { PartitionRequestClientFactory } from "./netty/partition-request-client-factory.js";
export { PartitionRequestServerHandler } from "./netty/partition-request-server-handler.js";
export type {
  ConnectionHandler,
  ConnectOptions,
  ListenOptions,
  Transport,
  TransportConnection,
  TransportServer,
} from "./netty/transport.js";
export {
  emitTransportWarning,
  listenerErrorHandler,
  TRANSPORT_WARNING_TYPE,
} from "./netty/transport-warning.js";
// Producer side
export {
  type BufferAndBacklog,
  isDataAvailable,
  isEventAvailable,
} from "./partition/buffer-and-backlog.js";
export type { BufferAvailabilityListener } from "./partition/buffer-availability-listener.js";
export { PipelinedSubpartition } from "./partition/pipelined-subpartition.js";
export { PipelinedSubpartitionView } from "./partition/pipelined-subpartition-view.js";
export { ResultPartition, type ResultPartitionOptions } from "./partition/result-partition.js";
export {
  type PartitionRequestListener,
  ResultPartitionManager,
} from "./partition/result-partition-manager.js";
export type {
  AvailabilityWithBacklog,
  ResultSubpartitionView,
} from "./partition/result-subpartition-view.js";
export { TaskEventDispatcher } from "./partition/task-event-publisher.js";
// Protocol
export * from "./protocol/index.js";
// Security
export {
  checkFingerprint,
  normalizeFingerprint,
  readTlsSettings,
  type TlsSettings,
  tlsClientOptions,
  tlsServerOptions,
} from "./security/tls-settings.js";
