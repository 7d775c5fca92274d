import { DataOutputSerializer, type TypeSerializer } from "@sluice/core";

/** Keys JavaScript's `Map` compares by value. */
type PrimitiveKey = string | number | bigint | boolean | undefined | null | symbol;

function isPrimitive(key: unknown): key is PrimitiveKey {
  return (typeof key !== "object" && typeof key !== "function") || key === null;
}

/**
 * A map from keys to values that compares keys by value, also composite ones (Flink's heap
 * `StateMap`, which compares keys with `equals`): strings, numbers, bigints and booleans are
 * their own map key, and a composite key (a tuple, a `Uint8Array`, an object with `hashCode()`)
 * is compared by the bytes its serializer writes, so `["a", 1]` finds what `["a", 1]` stored
 * whatever the array's identity. Iteration gives back the keys as they were stored.
 */
export class StateMap<K, V> {
  private readonly primitives = new Map<K, V>();
  private readonly composites = new Map<string, [K, V]>();
  private readonly keySerializer: TypeSerializer<K>;
  private scratch: DataOutputSerializer | undefined;

  constructor(keySerializer: TypeSerializer<K>) {
    this.keySerializer = keySerializer;
  }

  /** The number of entries. */
  get size(): number {
    return this.primitives.size + this.composites.size;
  }

  // get and set are called for every record of a keyed operator: the composite key's path is a
  // method of its own, so that the primitive one stays small enough to inline into the caller.
  get(key: K): V | undefined {
    return isPrimitive(key) ? this.primitives.get(key) : this.getComposite(key);
  }

  has(key: K): boolean {
    if (isPrimitive(key)) return this.primitives.has(key);
    return this.composites.has(this.canonical(key));
  }

  set(key: K, value: V): void {
    if (isPrimitive(key)) this.primitives.set(key, value);
    else this.setComposite(key, value);
  }

  delete(key: K): boolean {
    if (isPrimitive(key)) return this.primitives.delete(key);
    return this.composites.delete(this.canonical(key));
  }

  clear(): void {
    this.primitives.clear();
    this.composites.clear();
  }

  /** The entries, primitive keys first, each group in insertion order. */
  *entries(): IterableIterator<[K, V]> {
    yield* this.primitives.entries();
    for (const entry of this.composites.values()) yield [entry[0], entry[1]];
  }

  private getComposite(key: K): V | undefined {
    return this.composites.get(this.canonical(key))?.[1];
  }

  private setComposite(key: K, value: V): void {
    const canonical = this.canonical(key);
    const entry = this.composites.get(canonical);
    if (entry === undefined) this.composites.set(canonical, [key, value]);
    else entry[1] = value;
  }

  /** The key's serialized bytes as a string: equal for keys that serialize alike. */
  private canonical(key: K): string {
    this.scratch ??= new DataOutputSerializer();
    const out = this.scratch;
    out.clear();
    this.keySerializer.serialize(key, out);
    return out.getSharedBuffer().toString("latin1", 0, out.length);
  }
}
