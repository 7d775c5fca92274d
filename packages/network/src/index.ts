/**
 * @sluice/network: the transport-neutral network shuffle. Pipelined result partitions and their
 * subpartition queues, input gates with local and remote channels, the credit-based protocol
 * (codec, server queue, client handler) and the NetworkShuffleEnvironment / NetworkShuffleMaster
 * that the TCP and WebSocket plugins share. A plugin supplies only a {@link Transport}.
 */

// Compression
export {
  type BlockCompressionFactory,
  type BlockCompressor,
  type BlockDecompressor,
  createBlockCompressionFactory,
} from "./compression/block-compression-factory.js";
export { BufferCompressor } from "./compression/buffer-compressor.js";
export { BufferDecompressor } from "./compression/buffer-decompressor.js";
export {
  COMPRESSION_HEADER_LENGTH,
  type CompressionHeader,
} from "./compression/compression-header.js";
// Consumer side
export { BufferDebloater, type BufferDebloaterOptions } from "./consumer/buffer-debloater.js";
export { BufferManager } from "./consumer/buffer-manager.js";
export { ChannelStatePersister } from "./consumer/channel-state-persister.js";
export { ConnectionID } from "./consumer/connection-id.js";
export type { ConnectionManager } from "./consumer/connection-manager.js";
export {
  type Backoff,
  type BufferAndAvailability,
  InputChannel,
  type InputChannelOwner,
} from "./consumer/input-channel.js";
export { LocalInputChannel } from "./consumer/local-input-channel.js";
export type { PartitionRequestClient } from "./consumer/partition-request-client.js";
export { RemoteInputChannel } from "./consumer/remote-input-channel.js";
export {
  type ExclusiveBuffersFallback,
  type GateBuffersMode,
  type InputCounts,
  SingleInputGate,
  type SingleInputGateOptions,
} from "./consumer/single-input-gate.js";
export { type MillisClock, ThroughputCalculator } from "./consumer/throughput-calculator.js";
export { UnknownInputChannel } from "./consumer/unknown-input-channel.js";
// Environment, master, factory
export {
  createGateBuffersSpec,
  type GateBuffersSpec,
  outputPoolSize,
  type SortShuffleSettings,
} from "./environment/gate-buffers-spec.js";
export {
  type NetworkResultPartition,
  NetworkShuffleEnvironment,
} from "./environment/network-shuffle-environment.js";
export {
  type NetworkShuffleEnvironmentConfiguration,
  readNetworkShuffleEnvironmentConfiguration,
} from "./environment/network-shuffle-environment-configuration.js";
export { NetworkShuffleMaster } from "./environment/network-shuffle-master.js";
export {
  LocalShuffleServiceFactory,
  NetworkShuffleServiceFactory,
} from "./environment/network-shuffle-service-factory.js";
export {
  type NetworkMemorySource,
  segmentsForOneChannel,
  validateNetworkShuffleConfiguration,
} from "./environment/validate-network-shuffle-configuration.js";
// Metrics (Flink's names)
export {
  type ReadBufferPoolUsage,
  registerBatchShuffleMetrics,
  registerEnvironmentMetrics,
  registerInputMetrics,
  registerOutputMetrics,
} from "./metrics/shuffle-metrics.js";
// Client / server and the transport seam
export { PartitionRequestClientFactory } from "./netty/client/partition-request-client-factory.js";
export {
  PartitionRequestServerHandler,
  type ServerHandlerOptions,
} from "./netty/server/partition-request-server-handler.js";
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
export {
  emitTransportWarning,
  listenerErrorHandler,
  TRANSPORT_WARNING_TYPE,
} from "./netty/transport/transport-warning.js";
export { BatchShuffleCounters } from "./partition/batch-shuffle-counters.js";
export { BatchShuffleReadBufferPool } from "./partition/batch-shuffle-read-buffer-pool.js";
// Producer side
export {
  type BufferAndBacklog,
  isDataAvailable,
  isEventAvailable,
} from "./partition/buffer-and-backlog.js";
export type { BufferAvailabilityListener } from "./partition/buffer-availability-listener.js";
export type { DataBuffer, DataBufferOutput } from "./partition/data-buffer.js";
export { FileChannelManager } from "./partition/file-channel-manager.js";
export { HashBasedDataBuffer } from "./partition/hash-based-data-buffer.js";
export type {
  ManagedResultPartition,
  PartitionRegistry,
} from "./partition/managed-result-partition.js";
export {
  type BufferHeader,
  type IndexEntry,
  PartitionedFile,
} from "./partition/partitioned-file.js";
export {
  PipelinedResultPartition,
  type PipelinedResultPartitionOptions,
} from "./partition/pipelined-result-partition.js";
export { PipelinedSubpartition } from "./partition/pipelined-subpartition.js";
export { PipelinedSubpartitionView } from "./partition/pipelined-subpartition-view.js";
export { ResultPartition, type ResultPartitionOptions } from "./partition/result-partition.js";
export {
  ResultPartitionManager,
  type ResultPartitionManagerOptions,
} from "./partition/result-partition-manager.js";
export type {
  PartitionRequestListener,
  ResultPartitionProvider,
} from "./partition/result-partition-provider.js";
export type {
  AvailabilityWithBacklog,
  ResultSubpartitionView,
} from "./partition/result-subpartition-view.js";
export { SortBasedDataBuffer } from "./partition/sort-based-data-buffer.js";
export {
  type SortMergePartitionStatistics,
  SortMergeResultPartition,
  type SortMergeResultPartitionOptions,
} from "./partition/sort-merge-result-partition.js";
export { SortMergeSubpartitionReader } from "./partition/sort-merge-subpartition-reader.js";
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
// Between the slot threads of a task manager
export { CrossThreadSubpartitionView } from "./threads/cross-thread-subpartition-view.js";
export { CrossThreadViewReader } from "./threads/cross-thread-view-reader.js";
export {
  type PushReturnResult,
  type QueueRecord,
  RecordKind,
  type ReturnEntry,
  ReturnKind,
  SharedSubpartitionQueue,
  type SharedSubpartitionQueueHandle,
} from "./threads/shared-subpartition-queue.js";
export { TaskSlotPartitionProvider } from "./threads/task-slot-partition-provider.js";
