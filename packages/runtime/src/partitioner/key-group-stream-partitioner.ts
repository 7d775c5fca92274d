import { hashCodeOf } from "./hash-code.js";
import {
  checkMaxParallelism,
  checkParallelisms,
  computeOperatorIndexForKeyGroup,
} from "./key-group-range-assignment.js";
import type { KeySelector } from "./key-selector.js";
import { murmurHashOfInt32 } from "./murmur-hash.js";
import { StreamPartitioner } from "./stream-partitioner.js";

/**
 * Routes each record by key, as Flink's `KeyGroupStreamPartitioner` behind `keyBy`: the key is
 * hashed into one of `maxParallelism` key groups, and the key group into the channel of the consumer
 * instance that owns it. All records of a key reach the same consumer instance, and the same one
 * Flink would pick for the equal Java key with the same max parallelism.
 */
export class KeyGroupStreamPartitioner<T, K> extends StreamPartitioner<T> {
  readonly #keySelector: KeySelector<T, K>;
  readonly #maxParallelism: number;
  /**
   * The channel of every key group, filled by `setup()` with `computeOperatorIndexForKeyGroup`
   * (so it is Flink's assignment by construction); undefined before. Routing a record is then a
   * hash and a lookup: none of the range checks and no division per record.
   */
  #channelOfKeyGroup: Uint16Array | undefined;

  /**
   * @param keySelector - extracts the key; its result must be hashable by `hashCodeOf`.
   * @param maxParallelism - the number of key groups; must equal the consumer's max parallelism,
   *   since it fixes which instance owns which keys (and their state).
   * @throws IllegalArgumentError if `maxParallelism` is not an integer in `[1, 32768]`.
   */
  constructor(keySelector: KeySelector<T, K>, maxParallelism: number) {
    super();
    // Checked here rather than on the first record so a misconfigured job fails while it is built.
    checkMaxParallelism(maxParallelism);
    this.#keySelector = keySelector;
    this.#maxParallelism = maxParallelism;
  }

  /** The number of key groups keys are hashed into. */
  get maxParallelism(): number {
    return this.#maxParallelism;
  }

  /**
   * Records the number of channels (the consumer's parallelism).
   *
   * @throws IllegalArgumentError if `numberOfChannels` exceeds `maxParallelism`: some channels would
   *   own no key group.
   */
  override setup(numberOfChannels: number): void {
    super.setup(numberOfChannels);
    checkParallelisms(this.#maxParallelism, numberOfChannels);
    // At most 32768 key groups and channels: two bytes per key group, 64 KiB at most.
    const table = new Uint16Array(this.#maxParallelism);
    for (let keyGroup = 0; keyGroup < table.length; keyGroup++) {
      table[keyGroup] = computeOperatorIndexForKeyGroup(
        this.#maxParallelism,
        numberOfChannels,
        keyGroup,
      );
    }
    this.#channelOfKeyGroup = table;
  }

  /**
   * Returns the channel owning the record's key group:
   * `computeOperatorIndexForKeyGroup(maxP, n, assignToKeyGroup(key, maxP))`.
   *
   * @throws IllegalArgumentError if the key has no hash code (see `hashCodeOf`); errors thrown by the
   *   key selector propagate unchanged.
   */
  selectChannel(record: T): number {
    const table = this.#channelOfKeyGroup;
    if (table === undefined) return this.numberOfChannels; // throws the base class's IllegalStateError
    const key = this.#keySelector(record);
    // An int32 key is its own hash code (Java's Integer.hashCode), as in hashCodeOf; taken here
    // so that the common case does not inline hashCodeOf's type switch into every writer.
    // hashCodeOf returns an int32 (or throws), so the scrambler's own check is redundant here.
    const hashCode = typeof key === "number" && (key | 0) === key ? key | 0 : hashCodeOf(key);
    const keyGroup = murmurHashOfInt32(hashCode) % this.#maxParallelism;
    return table[keyGroup] as number;
  }

  /** `HASH` */
  toString(): string {
    return "HASH";
  }
}
