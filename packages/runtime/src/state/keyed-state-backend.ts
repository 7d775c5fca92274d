import {
  DataInputDeserializer,
  DataOutputSerializer,
  IllegalArgumentError,
  IllegalStateError,
  JsonSerializer,
  type TypeSerializer,
} from "@sluice/core";
import type { KeyGroupRange } from "../partitioner/key-group-range.js";
import { assignToKeyGroup } from "../partitioner/key-group-range-assignment.js";
import type { KeyContext } from "./key-context.js";
import { KeyedStateError } from "./keyed-state-error.js";
import {
  checkKeyedStateSnapshot,
  KEYED_STATE_SNAPSHOT_FORMAT,
  KEYED_STATE_SNAPSHOT_VERSION,
  type KeyedStateSnapshot,
  type KeyGroupSnapshot,
  type StateMetaInfo,
} from "./keyed-state-snapshot.js";
import { HeapListState, type ListState } from "./list-state.js";
import { HeapMapState, type MapState } from "./map-state.js";
import { redistributeKeyedState } from "./redistribute-keyed-state.js";
import type {
  ListStateDescriptor,
  MapStateDescriptor,
  StateDescriptor,
  ValueStateDescriptor,
} from "./state-descriptor.js";
import { StateMap } from "./state-map.js";
import { HeapValueState, type ValueState } from "./value-state.js";

/** What a {@link KeyedStateBackend} is created with. */
export interface KeyedStateBackendOptions<K> {
  /** Serializes keys into snapshots (and compares composite keys). */
  readonly keySerializer: TypeSerializer<K>;
  /** The number of key groups (`task.maxParallelism`). */
  readonly maxParallelism: number;
  /** The key groups this backend owns (`task.keyGroupRange`). */
  readonly keyGroupRange: KeyGroupRange;
  /** The serializer of descriptors that name none. Default: `JsonSerializer`. */
  readonly defaultSerializer?: TypeSerializer<unknown>;
  /** Names the backend in messages, e.g. the task's name. */
  readonly name?: string;
}

/** What a task offers a keyed state backend (the runtime's `Task` has it). */
export interface KeyedStateOwner {
  /** The task's name, for messages. */
  readonly name: string;
  /** The vertex's max parallelism. */
  readonly maxParallelism: number;
  /** The subtask's key groups. */
  readonly keyGroupRange: KeyGroupRange;
}

/** How the entries of one registered state are kept and written. */
interface RegisteredState<K> {
  readonly meta: StateMetaInfo;
  readonly table: StateMap<K, unknown>;
  readonly state: unknown;
  writeValue(value: unknown, out: DataOutputSerializer): void;
  readValue(input: DataInputDeserializer): unknown;
}

// biome-ignore lint/suspicious/noExplicitAny: a state of any value type.
type AnySerializer = TypeSerializer<any>;

/**
 * Keyed state on the heap (Flink's `HeapKeyedStateBackend`): states registered by descriptor,
 * each holding one entry per key, read and written for the key set last with
 * {@link setCurrentKey}, as Flink's keyed operators set it for every record.
 *
 * {@link snapshot} writes every entry into the key group its key hashes to (Flink's
 * `murmurHash(hashCode(key)) % maxParallelism`, as the HASH partitioner routes records), so a
 * restore at another parallelism takes whole key groups ({@link restore} accepts the snapshots of
 * every old subtask and keeps its own key groups). State restored for a name no descriptor has
 * asked for yet is kept as it is and written into the next snapshots unchanged, so nothing is
 * lost by a job version that reads it later.
 *
 * A task at the JobGraph level keeps it next to its other state:
 *
 * ```ts
 * const backend = KeyedStateBackend.forTask<string>(task);
 * backend.restore((task.restoredState as { keyed?: KeyedStateSnapshot } | undefined)?.keyed);
 * task.setCheckpointHandler({ snapshotState: () => ({ keyed: backend.snapshot() }) });
 * const count = backend.getState(new ValueStateDescriptor<number>("count"));
 * for await (const word of task.reader<string>()) {
 *   backend.setCurrentKey(word);
 *   count.update((count.value() ?? 0) + 1);
 * }
 * ```
 */
export class KeyedStateBackend<K> implements KeyContext<K> {
  /** The number of key groups. */
  readonly maxParallelism: number;
  /** The key groups this backend owns. */
  readonly keyGroupRange: KeyGroupRange;
  /** The keys' serializer. */
  readonly keySerializer: TypeSerializer<K>;
  private readonly name: string;
  private readonly defaultSerializer: TypeSerializer<unknown>;
  private readonly states = new Map<string, RegisteredState<K>>();
  /** Restored states no descriptor asked for yet: their meta info and bytes by key group. */
  private readonly pending = new Map<
    string,
    { meta: StateMetaInfo; groups: Map<number, string> }
  >();
  private currentKey: K | undefined;
  private hasCurrentKey = false;

  constructor(options: KeyedStateBackendOptions<K>) {
    const { maxParallelism, keyGroupRange } = options;
    this.name = options.name ?? "keyed state backend";
    if (
      keyGroupRange.numberOfKeyGroups > 0 &&
      (keyGroupRange.endKeyGroup >= maxParallelism || !Number.isInteger(maxParallelism))
    ) {
      throw new IllegalArgumentError(
        `${this.name}: ${keyGroupRange} is not within max parallelism ${maxParallelism}`,
      );
    }
    this.maxParallelism = maxParallelism;
    this.keyGroupRange = keyGroupRange;
    this.keySerializer = options.keySerializer;
    this.defaultSerializer = options.defaultSerializer ?? new JsonSerializer<unknown>();
  }

  /**
   * A backend for `task`'s key groups. Keys and state values are written with the serializers
   * given here and in the descriptors, else as JSON.
   */
  static forTask<K>(
    task: KeyedStateOwner,
    options: Pick<KeyedStateBackendOptions<K>, "defaultSerializer"> & {
      readonly keySerializer?: TypeSerializer<K>;
    } = {},
  ): KeyedStateBackend<K> {
    return new KeyedStateBackend({
      ...(options.defaultSerializer === undefined
        ? {}
        : { defaultSerializer: options.defaultSerializer }),
      keySerializer: options.keySerializer ?? new JsonSerializer<K>(),
      maxParallelism: task.maxParallelism,
      keyGroupRange: task.keyGroupRange,
      name: task.name,
    });
  }

  /** Scopes every state to `key` until the next call (Flink's `setCurrentKey`). */
  setCurrentKey(key: K): void {
    this.currentKey = key;
    this.hasCurrentKey = true;
  }

  /**
   * The key the states are scoped to.
   *
   * @throws IllegalStateError before the first {@link setCurrentKey}.
   */
  getCurrentKey(): K {
    // Every state access reads the key: the error is built elsewhere, to keep this inlinable.
    if (!this.hasCurrentKey) throw this.noCurrentKey();
    return this.currentKey as K;
  }

  private noCurrentKey(): IllegalStateError {
    return new IllegalStateError(
      `${this.name}: keyed state is used with no current key; call setCurrentKey(key) first`,
    );
  }

  /**
   * The value state `descriptor` names, created on first use (with what a restore brought).
   *
   * @throws IllegalArgumentError when the name is registered as another type or with other
   *   serializers; KeyedStateError when restored state of that name has other serializers.
   */
  getState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T> {
    const serializer = this.serializerOf(descriptor.serializer);
    return this.register(descriptor, [serializer], (table) => ({
      state: new HeapValueState<K, T>(this, table as StateMap<K, T>),
      writeValue: (value, out) => serializer.serialize(value, out),
      readValue: (input) => serializer.deserialize(input),
    })) as ValueState<T>;
  }

  /** The list state `descriptor` names, created on first use; throws as {@link getState}. */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T> {
    const serializer = this.serializerOf(descriptor.elementSerializer);
    return this.register(descriptor, [serializer], (table) => ({
      state: new HeapListState<K, T>(this, table as StateMap<K, T[]>),
      writeValue: (value, out) => {
        const list = value as unknown[];
        out.writeInt(list.length);
        for (const element of list) serializer.serialize(element, out);
      },
      readValue: (input) => {
        const length = readCount(input, this.name, descriptor.name);
        const list = new Array<unknown>(length);
        for (let i = 0; i < length; i++) list[i] = serializer.deserialize(input);
        return list;
      },
    })) as ListState<T>;
  }

  /** The map state `descriptor` names, created on first use; throws as {@link getState}. */
  getMapState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV> {
    const userKeys = this.serializerOf(descriptor.userKeySerializer);
    const userValues = this.serializerOf(descriptor.userValueSerializer);
    return this.register(descriptor, [userKeys, userValues], (table) => ({
      state: new HeapMapState<K, UK, UV>(this, table as StateMap<K, StateMap<UK, UV>>, userKeys),
      writeValue: (value, out) => {
        const map = value as StateMap<unknown, unknown>;
        out.writeInt(map.size);
        for (const [userKey, userValue] of map.entries()) {
          userKeys.serialize(userKey, out);
          userValues.serialize(userValue, out);
        }
      },
      readValue: (input) => {
        const size = readCount(input, this.name, descriptor.name);
        const map = new StateMap<unknown, unknown>(userKeys);
        for (let i = 0; i < size; i++)
          map.set(userKeys.deserialize(input), userValues.deserialize(input));
        return map;
      },
    })) as MapState<UK, UV>;
  }

  /** The keys that hold an entry of state `stateName` (Flink's `getKeys`), in no set order. */
  *getKeys(stateName: string): IterableIterator<K> {
    const registered = this.states.get(stateName);
    if (registered === undefined) return;
    for (const [key] of registered.table.entries()) yield key;
  }

  /**
   * Every entry, grouped by the key group of its key (synchronous: call it inside the task's
   * `snapshotState`). The snapshot does not alias the backend: the backend may change at once.
   *
   * @throws KeyedStateError when a key is outside {@link keyGroupRange} (its records were routed
   *   by another key than this state is kept by), or a key or value cannot be serialized.
   */
  snapshot(): KeyedStateSnapshot {
    const byGroup = new Map<number, Map<string, unknown[][]>>();
    const metas: StateMetaInfo[] = [];
    for (const [name, registered] of this.states) {
      metas.push(registered.meta);
      for (const [key, value] of registered.table.entries()) {
        const keyGroup = this.keyGroupOf(key, name);
        let states = byGroup.get(keyGroup);
        if (states === undefined) {
          states = new Map();
          byGroup.set(keyGroup, states);
        }
        let entries = states.get(name);
        if (entries === undefined) {
          entries = [];
          states.set(name, entries);
        }
        entries.push([key, value]);
      }
    }
    const out = new DataOutputSerializer();
    const groups = new Map<number, Record<string, string>>();
    for (const [keyGroup, states] of byGroup) {
      const encoded: Record<string, string> = {};
      for (const [name, entries] of states) {
        const registered = this.states.get(name) as RegisteredState<K>;
        out.clear();
        out.writeInt(entries.length);
        for (const [key, value] of entries) {
          this.keySerializer.serialize(key as K, out);
          registered.writeValue(value, out);
        }
        encoded[name] = out.getSharedBuffer().toString("base64");
      }
      groups.set(keyGroup, encoded);
    }
    for (const [name, { meta, groups: pendingGroups }] of this.pending) {
      metas.push(meta);
      for (const [keyGroup, bytes] of pendingGroups) {
        let encoded = groups.get(keyGroup);
        if (encoded === undefined) {
          encoded = {};
          groups.set(keyGroup, encoded);
        }
        encoded[name] = bytes;
      }
    }
    const keyGroups: KeyGroupSnapshot[] = [...groups.entries()]
      .sort(([a], [b]) => a - b)
      .map(([keyGroup, states]) => ({ keyGroup, states }));
    return {
      format: KEYED_STATE_SNAPSHOT_FORMAT,
      version: KEYED_STATE_SNAPSHOT_VERSION,
      maxParallelism: this.maxParallelism,
      keyGroupRange: {
        start: this.keyGroupRange.startKeyGroup,
        end: this.keyGroupRange.endKeyGroup,
      },
      keySerializer: this.keySerializer.name,
      states: metas,
      keyGroups,
    };
  }

  /**
   * Restores the key groups of {@link keyGroupRange} from `snapshots`: one snapshot, or the
   * snapshots of every subtask of an earlier run at any parallelism (see
   * `redistributeKeyedState`). `undefined` (a fresh start) restores nothing. A state is decoded
   * when its descriptor is first used, or now when it already was; restored entries replace
   * the entries of the same keys.
   *
   * @throws KeyedStateError when a snapshot is not one this release reads, or its max
   *   parallelism, key serializer or a registered state's serializers differ from this backend's.
   */
  restore(snapshots: unknown): void {
    if (snapshots === undefined || snapshots === null) return;
    const list = Array.isArray(snapshots) ? snapshots : [snapshots];
    if (list.length === 0) return;
    for (const [i, value] of list.entries()) {
      const old = checkKeyedStateSnapshot(value, `${this.name}: restored snapshot ${i}`);
      if (old.maxParallelism !== this.maxParallelism) {
        throw new KeyedStateError(
          `${this.name}: the restored keyed state has max parallelism ${old.maxParallelism}, this backend ${this.maxParallelism}: a job's max parallelism cannot change across a restore`,
        );
      }
      if (old.keySerializer !== this.keySerializer.name) {
        throw new KeyedStateError(
          `${this.name}: the restored keyed state has keys of serializer "${old.keySerializer}", this backend "${this.keySerializer.name}"`,
        );
      }
    }
    const snapshot = redistributeKeyedState(list, this.keyGroupRange);
    for (const meta of snapshot.states) {
      const groups = new Map<number, string>();
      for (const group of snapshot.keyGroups) {
        const bytes = group.states[meta.name];
        if (bytes !== undefined) groups.set(group.keyGroup, bytes);
      }
      const registered = this.states.get(meta.name);
      if (registered === undefined) {
        this.pending.set(meta.name, { meta, groups });
      } else {
        checkMeta(this.name, meta, registered.meta);
        this.decode(registered, groups);
      }
    }
  }

  private serializerOf<T>(serializer: TypeSerializer<T> | undefined): AnySerializer {
    return serializer ?? this.defaultSerializer;
  }

  private register(
    descriptor: StateDescriptor,
    serializers: readonly AnySerializer[],
    create: (table: StateMap<K, unknown>) => Omit<RegisteredState<K>, "meta" | "table">,
  ): unknown {
    const meta: StateMetaInfo = {
      name: descriptor.name,
      type: descriptor.type,
      serializers: serializers.map((serializer) => serializer.name),
    };
    const known = this.states.get(descriptor.name);
    if (known !== undefined) {
      if (
        known.meta.type !== meta.type ||
        known.meta.serializers.join("\u0000") !== meta.serializers.join("\u0000")
      ) {
        throw new IllegalArgumentError(
          `${this.name}: state "${descriptor.name}" is registered as ${describe(known.meta)}, not as ${describe(meta)}`,
        );
      }
      return known.state;
    }
    const table = new StateMap<K, unknown>(this.keySerializer);
    const registered: RegisteredState<K> = { meta, table, ...create(table) };
    const restored = this.pending.get(descriptor.name);
    if (restored !== undefined) {
      checkMeta(this.name, restored.meta, meta);
      this.decode(registered, restored.groups);
      this.pending.delete(descriptor.name);
    }
    this.states.set(descriptor.name, registered);
    return registered.state;
  }

  private decode(registered: RegisteredState<K>, groups: ReadonlyMap<number, string>): void {
    const input = new DataInputDeserializer();
    const { name } = registered.meta;
    for (const [keyGroup, base64] of groups) {
      input.setBuffer(Buffer.from(base64, "base64"));
      try {
        const count = readCount(input, this.name, name);
        for (let i = 0; i < count; i++) {
          const key = this.keySerializer.deserialize(input);
          const actual = this.keyGroupOf(key, name);
          if (actual !== keyGroup) {
            throw new KeyedStateError(
              `key group ${keyGroup} of state "${name}" holds a key of key group ${actual}`,
            );
          }
          registered.table.set(key, registered.readValue(input));
        }
        if (input.available() !== 0) {
          throw new KeyedStateError(`${input.available()} bytes left after the entries`);
        }
      } catch (error) {
        throw new KeyedStateError(
          `${this.name}: cannot restore key group ${keyGroup} of state "${name}": ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
  }

  private keyGroupOf(key: K, stateName: string): number {
    let keyGroup: number;
    try {
      keyGroup = assignToKeyGroup(key, this.maxParallelism);
    } catch (error) {
      throw new KeyedStateError(
        `${this.name}: state "${stateName}" holds a key that has no key group: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (!this.keyGroupRange.contains(keyGroup)) {
      throw new KeyedStateError(
        `${this.name}: state "${stateName}" holds key ${String(key)} of key group ${keyGroup}, outside this backend's ${this.keyGroupRange}: its records were routed by another key than the state is kept by`,
      );
    }
    return keyGroup;
  }
}

function describe(meta: StateMetaInfo): string {
  return `${meta.type} of [${meta.serializers.join(", ")}]`;
}

function checkMeta(backend: string, restored: StateMetaInfo, wanted: StateMetaInfo): void {
  if (
    restored.type !== wanted.type ||
    restored.serializers.join("\u0000") !== wanted.serializers.join("\u0000")
  ) {
    throw new KeyedStateError(
      `${backend}: state "${wanted.name}" was checkpointed as ${describe(restored)} and is now read as ${describe(wanted)}`,
    );
  }
}

function readCount(input: DataInputDeserializer, backend: string, state: string): number {
  const count = input.readInt();
  // Each entry takes at least a byte: a larger count is corruption, not a reason to allocate.
  if (count < 0 || count > input.available()) {
    throw new KeyedStateError(
      `${backend}: state "${state}" has a count of ${count} with ${input.available()} bytes left`,
    );
  }
  return count;
}
