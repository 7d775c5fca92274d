import type { KeyContext } from "./key-context.js";
import type { StateMap } from "./state-map.js";

/**
 * One value per key (Flink's `ValueState`), scoped to the backend's current key: each call reads
 * or writes the value of the key the backend was set to last.
 */
export interface ValueState<T> {
  /** The current key's value; `undefined` when it has none. */
  value(): T | undefined;
  /** Sets the current key's value; `undefined` clears it. */
  update(value: T | undefined): void;
  /** Removes the current key's value. */
  clear(): void;
}

/** A {@link ValueState} on the heap: the values in a map by key. */
export class HeapValueState<K, T> implements ValueState<T> {
  constructor(
    private readonly keys: KeyContext<K>,
    private readonly table: StateMap<K, T>,
  ) {}

  value(): T | undefined {
    return this.table.get(this.keys.getCurrentKey());
  }

  update(value: T | undefined): void {
    if (value === undefined) this.clear();
    else this.table.set(this.keys.getCurrentKey(), value);
  }

  clear(): void {
    this.table.delete(this.keys.getCurrentKey());
  }
}
