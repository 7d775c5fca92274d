/**
 * Keyed state (Flink's `runtime/state`): value, list and map state scoped to the current key, a
 * heap backend that snapshots them grouped by key group, and the redistribution of those
 * snapshots to the key-group ranges of another parallelism.
 *
 * @packageDocumentation
 */

export type { KeyContext } from "./key-context.js";
export {
  KeyedStateBackend,
  type KeyedStateBackendOptions,
  type KeyedStateOwner,
} from "./keyed-state-backend.js";
export { KeyedStateError } from "./keyed-state-error.js";
export {
  checkKeyedStateSnapshot,
  isKeyedStateSnapshot,
  KEYED_STATE_SNAPSHOT_FORMAT,
  KEYED_STATE_SNAPSHOT_VERSION,
  type KeyedStateSnapshot,
  type KeyGroupSnapshot,
  type StateMetaInfo,
} from "./keyed-state-snapshot.js";
export type { ListState } from "./list-state.js";
export type { MapState } from "./map-state.js";
export {
  assignKeyedStateToSubtasks,
  keyGroupRangeOf,
  redistributeKeyedState,
} from "./redistribute-keyed-state.js";
export {
  ListStateDescriptor,
  MapStateDescriptor,
  type StateDescriptor,
  type StateType,
  ValueStateDescriptor,
} from "./state-descriptor.js";
export type { ValueState } from "./value-state.js";
