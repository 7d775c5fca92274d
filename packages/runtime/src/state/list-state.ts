import type { KeyContext } from "./key-context.js";
import type { StateMap } from "./state-map.js";

/**
 * A list of values per key (Flink's `ListState`), scoped to the backend's current key. An empty
 * list is no list: the key then holds nothing in a snapshot.
 */
export interface ListState<T> {
  /** The current key's elements, in the order they were added (empty when none). */
  get(): readonly T[];
  /** Appends `value` to the current key's list. */
  add(value: T): void;
  /** Appends `values` to the current key's list. */
  addAll(values: Iterable<T>): void;
  /** Replaces the current key's list with `values`. */
  update(values: Iterable<T>): void;
  /** Removes the current key's list. */
  clear(): void;
}

const EMPTY: readonly never[] = Object.freeze([]);

/** A {@link ListState} on the heap: an array per key. */
export class HeapListState<K, T> implements ListState<T> {
  constructor(
    private readonly keys: KeyContext<K>,
    private readonly table: StateMap<K, T[]>,
  ) {}

  get(): readonly T[] {
    return this.table.get(this.keys.getCurrentKey()) ?? EMPTY;
  }

  add(value: T): void {
    const key = this.keys.getCurrentKey();
    const list = this.table.get(key);
    if (list === undefined) this.table.set(key, [value]);
    else list.push(value);
  }

  addAll(values: Iterable<T>): void {
    const key = this.keys.getCurrentKey();
    const added = [...values];
    if (added.length === 0) return;
    const list = this.table.get(key);
    if (list === undefined) this.table.set(key, added);
    else list.push(...added);
  }

  update(values: Iterable<T>): void {
    const key = this.keys.getCurrentKey();
    const list = [...values];
    if (list.length === 0) this.table.delete(key);
    else this.table.set(key, list);
  }

  clear(): void {
    this.table.delete(this.keys.getCurrentKey());
  }
}
