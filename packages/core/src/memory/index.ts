export {
  AVAILABLE,
  AvailabilityHelper,
  type AvailabilityProvider,
  allOf,
  anyOf,
} from "./availability.js";
export { BufferBuilder } from "./buffer-builder.js";
export { BufferConsumer, type PositionMarker } from "./buffer-consumer.js";
export type { BufferListener } from "./buffer-listener.js";
export { type BufferRecycler, FreeingBufferRecycler } from "./buffer-recycler.js";
export {
  DataType,
  hasPriority,
  isBlockingUpstream,
  isBufferType,
  isEventType,
  MAX_DATA_TYPE,
  requiresAnnouncement,
} from "./data-type.js";
export { LocalBufferPool, type LocalBufferPoolOptions } from "./local-buffer-pool.js";
export { MemorySegment } from "./memory-segment.js";
export { NetworkBuffer } from "./network-buffer.js";
export { NetworkBufferPool } from "./network-buffer-pool.js";
export { copyBytes, copyOutOfSharedMemory } from "./shared-memory-copy.js";
export {
  MAX_SHARED_MEMORY_THREADS,
  SharedNetworkMemory,
  type SharedNetworkMemoryHandle,
} from "./shared-network-memory.js";
export { SharedSegmentFreeList } from "./shared-segment-free-list.js";
