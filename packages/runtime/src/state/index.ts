/**
 * Keyed state (Flink's `runtime/state`): value, list and map state scoped to the current key, a
 * heap backend that snapshots them grouped by key group, operator list state, and the
 * redistribution of a task's state to the subtasks of another parallelism.
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
  checkOperatorListStateSnapshot,
  isOperatorListStateSnapshot,
  OPERATOR_LIST_STATE_FORMAT,
  OPERATOR_LIST_STATE_VERSION,
  type OperatorListStateSnapshot,
  type OperatorStateDistributionMode,
  operatorListState,
  operatorListStateElements,
  repartitionOperatorListState,
} from "./operator-list-state.js";
export {
  assignKeyedStateToSubtasks,
  keyGroupRangeOf,
  redistributeKeyedState,
} from "./redistribute-keyed-state.js";
export { redistributeTaskState, type TaskStateTarget } from "./redistribute-task-state.js";
export { StateAssignmentError } from "./state-assignment-error.js";
export {
  ListStateDescriptor,
  MapStateDescriptor,
  type StateDescriptor,
  type StateType,
  ValueStateDescriptor,
} from "./state-descriptor.js";
export type { ValueState } from "./value-state.js";
