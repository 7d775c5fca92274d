/**
 * @sluice/shuffle-remote: a shuffle plugin whose BLOCKING partitions live on shuffle workers and
 * outlive the task managers that produced them. Select it with
 * `shuffle-service-factory.class: remote` (or `@sluice/shuffle-remote#RemoteShuffleServiceFactory`)
 * and start workers with `ShuffleWorker.start(configuration)` or `sluice-shuffle-worker`.
 */

export type { EmbeddedWorker } from "./embedded-shuffle-workers.js";
export type { RpcServerStats } from "./frame-server.js";
export { type RemoteChannelSlot, RemoteInputGate } from "./remote-input-gate.js";
export {
  RemoteResultPartitionWriter,
  type RemoteResultPartitionWriterOptions,
} from "./remote-result-partition-writer.js";
export {
  accessOf,
  createRemoteShuffleDescriptor,
  type PartitionAccess,
  REMOTE_SHUFFLE_DESCRIPTOR_KIND,
  type RemoteShuffleDescriptor,
  type ShuffleWorkerAddress,
  workerOf,
} from "./remote-shuffle-descriptor.js";
export { RemoteShuffleEnvironment } from "./remote-shuffle-environment.js";
export {
  type LostShuffleWorker,
  type RegisteredShuffleWorker,
  RemoteShuffleMaster,
} from "./remote-shuffle-master.js";
export { RemoteShuffleOptions } from "./remote-shuffle-options.js";
export {
  RemoteShuffleServiceFactory,
  RemoteShuffleServiceFactory as default,
} from "./remote-shuffle-service-factory.js";
export {
  type ShuffleManagerAddress,
  ShuffleWorker,
  type ShuffleWorkerStartOptions,
  type ShuffleWorkerStorage,
  type StoredPartition,
  type WorkerRegistration,
} from "./shuffle-worker.js";
export type { SubpartitionChecksumJSON } from "./subpartition-checksum.js";
