import { KeyGroupRange } from "../partitioner/key-group-range.js";
import {
  checkParallelisms,
  computeKeyGroupRangeForOperatorIndex,
} from "../partitioner/key-group-range-assignment.js";
import { KeyedStateError } from "./keyed-state-error.js";
import {
  checkKeyedStateSnapshot,
  KEYED_STATE_SNAPSHOT_FORMAT,
  KEYED_STATE_SNAPSHOT_VERSION,
  type KeyedStateSnapshot,
  type KeyGroupSnapshot,
  type StateMetaInfo,
} from "./keyed-state-snapshot.js";

/**
 * The keyed state a subtask owning `range` restores from the snapshots of every subtask of an
 * earlier run, whatever its parallelism (Flink's `StateAssignmentOperation` for keyed state):
 * the key groups of `range` found in any of them, whole and undecoded, with the union of their
 * states' meta info. A pure function: the same inputs give the same snapshot.
 *
 * @param snapshots - the old subtasks' snapshots (a subtask that held no keyed state may be left out).
 * @param range - the new subtask's key groups (`task.keyGroupRange`).
 * @throws KeyedStateError when a snapshot is not one this release reads, the snapshots differ in
 *   max parallelism, key serializer or a state's type or serializers, two hold the same key
 *   group, or `range` goes beyond their key groups.
 */
export function redistributeKeyedState(
  snapshots: readonly unknown[],
  range: KeyGroupRange,
): KeyedStateSnapshot {
  const checked = snapshots.map((snapshot, i) =>
    checkKeyedStateSnapshot(snapshot, `keyed state snapshot ${i}`),
  );
  const [first] = checked;
  if (first === undefined) {
    throw new KeyedStateError(`no keyed state snapshot to restore ${range} from`);
  }
  const { maxParallelism, keySerializer } = first;
  if (range.numberOfKeyGroups > 0 && range.endKeyGroup >= maxParallelism) {
    throw new KeyedStateError(
      `cannot restore ${range} from snapshots of ${maxParallelism} key groups (max parallelism ${maxParallelism})`,
    );
  }
  const states = new Map<string, StateMetaInfo>();
  const groups = new Map<number, KeyGroupSnapshot>();
  for (const [i, snapshot] of checked.entries()) {
    if (snapshot.maxParallelism !== maxParallelism) {
      throw new KeyedStateError(
        `keyed state snapshot ${i} has max parallelism ${snapshot.maxParallelism}, snapshot 0 has ${maxParallelism}: snapshots of one job vertex share their key groups`,
      );
    }
    if (snapshot.keySerializer !== keySerializer) {
      throw new KeyedStateError(
        `keyed state snapshot ${i} has key serializer "${snapshot.keySerializer}", snapshot 0 has "${keySerializer}"`,
      );
    }
    for (const meta of snapshot.states) {
      const known = states.get(meta.name);
      if (known === undefined) states.set(meta.name, meta);
      else if (
        known.type !== meta.type ||
        known.serializers.join("\u0000") !== meta.serializers.join("\u0000")
      ) {
        throw new KeyedStateError(
          `state "${meta.name}" is ${meta.type} of [${meta.serializers.join(", ")}] in keyed state snapshot ${i} but ${known.type} of [${known.serializers.join(", ")}] in another`,
        );
      }
    }
    for (const group of snapshot.keyGroups) {
      if (groups.has(group.keyGroup)) {
        throw new KeyedStateError(
          `key group ${group.keyGroup} is in two keyed state snapshots (snapshot ${i} and an earlier one): each key group has one owner`,
        );
      }
      if (range.contains(group.keyGroup)) groups.set(group.keyGroup, group);
    }
  }
  return {
    format: KEYED_STATE_SNAPSHOT_FORMAT,
    version: KEYED_STATE_SNAPSHOT_VERSION,
    maxParallelism,
    keyGroupRange: { start: range.startKeyGroup, end: range.endKeyGroup },
    keySerializer,
    states: [...states.values()],
    keyGroups: [...groups.values()].sort((a, b) => a.keyGroup - b.keyGroup),
  };
}

/**
 * The keyed state of every subtask of a vertex restored at `parallelism` from the snapshots of
 * its earlier run: {@link redistributeKeyedState} for the key-group range of each new subtask
 * (`computeKeyGroupRangeForOperatorIndex`), in subtask order.
 *
 * @throws KeyedStateError as {@link redistributeKeyedState}; IllegalArgumentError when
 *   `parallelism` exceeds the snapshots' max parallelism.
 */
export function assignKeyedStateToSubtasks(
  snapshots: readonly unknown[],
  parallelism: number,
): KeyedStateSnapshot[] {
  const [first] = snapshots;
  if (first === undefined) throw new KeyedStateError("no keyed state snapshot to assign");
  const { maxParallelism } = checkKeyedStateSnapshot(first, "keyed state snapshot 0");
  checkParallelisms(maxParallelism, parallelism);
  return Array.from({ length: parallelism }, (_, subtask) =>
    redistributeKeyedState(
      snapshots,
      computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, subtask),
    ),
  );
}

/** The key-group range a snapshot says its backend owned. */
export function keyGroupRangeOf(snapshot: KeyedStateSnapshot): KeyGroupRange {
  return new KeyGroupRange(snapshot.keyGroupRange.start, snapshot.keyGroupRange.end);
}
