import { KeyedStateError } from "./keyed-state-error.js";
import type { StateType } from "./state-descriptor.js";

/** The `format` of every keyed state snapshot. */
export const KEYED_STATE_SNAPSHOT_FORMAT = "sluice-keyed-state";

/** The version of the snapshot layout this release writes and reads. */
export const KEYED_STATE_SNAPSHOT_VERSION = 1;

/**
 * What a snapshot says of one state (Flink's `StateMetaInfoSnapshot`): its name, its type and
 * the names of its serializers: `[value]` for VALUE, `[element]` for LIST, `[userKey, userValue]`
 * for MAP. A restore checks them against the descriptor the state is read with.
 */
export type StateMetaInfo = {
  readonly name: string;
  readonly type: StateType;
  readonly serializers: string[];
};

/**
 * The state of one key group: per state name (of {@link KeyedStateSnapshot.states}), its entries
 * in base64. The bytes are the entry layout of docs/architecture.md ("Keyed state and its
 * snapshots"): an int32 number of entries, then per entry the key (key serializer) and its value
 * (VALUE: the value; LIST: an int32 count and the elements; MAP: an int32 count and the
 * user key / user value pairs). States with no entry in the key group are left out.
 */
export type KeyGroupSnapshot = {
  readonly keyGroup: number;
  readonly states: { readonly [stateName: string]: string };
};

/**
 * A keyed state backend's snapshot (Flink's `KeyGroupsStateHandle` with its meta info), as JSON
 * in a task's checkpointed state. It is grouped by key group and names its serializers, so a
 * restore at another parallelism is a pure function of the old snapshots and the new subtask's
 * key-group range (`redistributeKeyedState`): each key group moves whole, without decoding.
 */
export type KeyedStateSnapshot = {
  /** Always {@link KEYED_STATE_SNAPSHOT_FORMAT}. */
  readonly format: typeof KEYED_STATE_SNAPSHOT_FORMAT;
  /** The layout's version, {@link KEYED_STATE_SNAPSHOT_VERSION}. */
  readonly version: number;
  /** The number of key groups keys were hashed into (the vertex's max parallelism). */
  readonly maxParallelism: number;
  /** The key groups the snapshotting backend owned, inclusive. */
  readonly keyGroupRange: { readonly start: number; readonly end: number };
  /** The name of the keys' serializer. */
  readonly keySerializer: string;
  /** Every state the snapshot holds, by name. */
  readonly states: StateMetaInfo[];
  /** The key groups that hold entries, ascending; each within {@link keyGroupRange}. */
  readonly keyGroups: KeyGroupSnapshot[];
};

/** Whether `value` claims to be a keyed state snapshot (has its `format`). */
export function isKeyedStateSnapshot(value: unknown): value is KeyedStateSnapshot {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as { format?: unknown }).format === KEYED_STATE_SNAPSHOT_FORMAT
  );
}

const STATE_TYPES: readonly StateType[] = ["VALUE", "LIST", "MAP"];
const SERIALIZERS_OF_TYPE: Readonly<Record<StateType, number>> = { VALUE: 1, LIST: 1, MAP: 2 };

/**
 * Checks that `value` is a keyed state snapshot of a version this release reads, with a valid
 * layout, and returns it typed. `where` names it in messages (`"Count (1/2)#0"`).
 *
 * @throws KeyedStateError naming what is wrong.
 */
export function checkKeyedStateSnapshot(value: unknown, where: string): KeyedStateSnapshot {
  const fail = (what: string): never => {
    throw new KeyedStateError(`${where}: not a keyed state snapshot this release reads: ${what}`);
  };
  if (!isKeyedStateSnapshot(value)) {
    return fail(`its format is not "${KEYED_STATE_SNAPSHOT_FORMAT}"`);
  }
  const snapshot = value as KeyedStateSnapshot;
  if (snapshot.version !== KEYED_STATE_SNAPSHOT_VERSION) {
    fail(`version ${snapshot.version}, this release reads ${KEYED_STATE_SNAPSHOT_VERSION}`);
  }
  const { maxParallelism, keyGroupRange: range } = snapshot;
  if (!Number.isInteger(maxParallelism) || maxParallelism < 1) {
    fail(`maxParallelism ${maxParallelism}`);
  }
  if (
    typeof range !== "object" ||
    range === null ||
    !Number.isInteger(range.start) ||
    !Number.isInteger(range.end) ||
    range.start < 0 ||
    range.end < range.start - 1 ||
    range.end >= maxParallelism
  ) {
    fail(`keyGroupRange ${JSON.stringify(range)} within ${maxParallelism} key groups`);
  }
  if (typeof snapshot.keySerializer !== "string") fail("no keySerializer name");
  if (!Array.isArray(snapshot.states)) fail("no states list");
  const names = new Set<string>();
  for (const meta of snapshot.states) {
    if (
      typeof meta?.name !== "string" ||
      names.has(meta.name) ||
      !STATE_TYPES.includes(meta.type) ||
      !Array.isArray(meta.serializers) ||
      meta.serializers.length !== SERIALIZERS_OF_TYPE[meta.type] ||
      meta.serializers.some((name) => typeof name !== "string")
    ) {
      fail(`state meta info ${JSON.stringify(meta)}`);
    }
    names.add(meta.name);
  }
  if (!Array.isArray(snapshot.keyGroups)) fail("no keyGroups list");
  let previous = -1;
  for (const group of snapshot.keyGroups) {
    const keyGroup = group?.keyGroup;
    if (
      !Number.isInteger(keyGroup) ||
      keyGroup <= previous ||
      keyGroup < range.start ||
      keyGroup > range.end ||
      typeof group.states !== "object" ||
      group.states === null
    ) {
      fail(
        `key group entry ${JSON.stringify(keyGroup)} after ${previous} in ${range.start}..${range.end}`,
      );
    }
    for (const [name, bytes] of Object.entries(group.states)) {
      if (!names.has(name) || typeof bytes !== "string") {
        fail(`key group ${keyGroup} holds state "${name}", which the snapshot does not describe`);
      }
    }
    previous = keyGroup;
  }
  return snapshot;
}
