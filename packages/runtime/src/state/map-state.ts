import type { TypeSerializer } from "@sluice/core";
import type { KeyContext } from "./key-context.js";
import { StateMap } from "./state-map.js";

/**
 * A map per key (Flink's `MapState`), scoped to the backend's current key. Map keys compare by
 * value, composite ones (tuples, `Uint8Array`s) by their serialized bytes. An empty map is no
 * map: the key then holds nothing in a snapshot.
 */
export interface MapState<UK, UV> {
  /** The value of `userKey` in the current key's map. */
  get(userKey: UK): UV | undefined;
  /** Sets `userKey` to `value` in the current key's map. */
  put(userKey: UK, value: UV): void;
  /** Sets every entry of `entries` in the current key's map. */
  putAll(entries: Iterable<readonly [UK, UV]>): void;
  /** Removes `userKey` from the current key's map. */
  remove(userKey: UK): void;
  /** Whether the current key's map holds `userKey`. */
  contains(userKey: UK): boolean;
  /** The current key's entries. */
  entries(): IterableIterator<[UK, UV]>;
  /** The current key's map keys. */
  keys(): IterableIterator<UK>;
  /** The current key's map values. */
  values(): IterableIterator<UV>;
  /** Whether the current key's map is empty. */
  isEmpty(): boolean;
  /** Removes the current key's map. */
  clear(): void;
}

/** A {@link MapState} on the heap: a {@link StateMap} per key. */
export class HeapMapState<K, UK, UV> implements MapState<UK, UV> {
  constructor(
    private readonly keys_: KeyContext<K>,
    private readonly table: StateMap<K, StateMap<UK, UV>>,
    private readonly userKeySerializer: TypeSerializer<UK>,
  ) {}

  get(userKey: UK): UV | undefined {
    return this.table.get(this.keys_.getCurrentKey())?.get(userKey);
  }

  put(userKey: UK, value: UV): void {
    this.mapOfCurrentKey().set(userKey, value);
  }

  putAll(entries: Iterable<readonly [UK, UV]>): void {
    const map = this.mapOfCurrentKey();
    for (const [userKey, value] of entries) map.set(userKey, value);
  }

  remove(userKey: UK): void {
    const key = this.keys_.getCurrentKey();
    const map = this.table.get(key);
    if (map === undefined) return;
    map.delete(userKey);
    if (map.size === 0) this.table.delete(key);
  }

  contains(userKey: UK): boolean {
    return this.table.get(this.keys_.getCurrentKey())?.has(userKey) ?? false;
  }

  *entries(): IterableIterator<[UK, UV]> {
    const map = this.table.get(this.keys_.getCurrentKey());
    if (map !== undefined) yield* map.entries();
  }

  *keys(): IterableIterator<UK> {
    for (const [userKey] of this.entries()) yield userKey;
  }

  *values(): IterableIterator<UV> {
    for (const [, value] of this.entries()) yield value;
  }

  isEmpty(): boolean {
    return (this.table.get(this.keys_.getCurrentKey())?.size ?? 0) === 0;
  }

  clear(): void {
    this.table.delete(this.keys_.getCurrentKey());
  }

  private mapOfCurrentKey(): StateMap<UK, UV> {
    const key = this.keys_.getCurrentKey();
    let map = this.table.get(key);
    if (map === undefined) {
      map = new StateMap(this.userKeySerializer);
      this.table.set(key, map);
    }
    return map;
  }
}
