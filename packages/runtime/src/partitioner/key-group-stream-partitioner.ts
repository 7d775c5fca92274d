import { hashCodeOf } from "./hash-code.js";
import { checkMaxParallelism, checkParallelisms } from "./key-group-range-assignment.js";
import type { KeySelector } from "./key-selector.js";
import { murmurHash } from "./murmur-hash.js";
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
   * The channel count validated by `setup()`, 0 before. Kept here so that routing a record repeats
   * none of the range checks of `assignToKeyGroup` and `computeOperatorIndexForKeyGroup`: both
   * inputs were checked once, and a key group from `% maxParallelism` is in range by construction.
   */
  #channels = 0;

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
    this.#channels = numberOfChannels;
  }

  /**
   * Returns the channel owning the record's key group:
   * `computeOperatorIndexForKeyGroup(maxP, n, assignToKeyGroup(key, maxP))`.
   *
   * @throws IllegalArgumentError if the key has no hash code (see `hashCodeOf`); errors thrown by the
   *   key selector propagate unchanged.
   */
  selectChannel(record: T): number {
    // Before setup() the base class getter throws its IllegalStateError.
    const channels = this.#channels === 0 ? this.numberOfChannels : this.#channels;
    const maxParallelism = this.#maxParallelism;
    const keyGroup = murmurHash(hashCodeOf(this.#keySelector(record))) % maxParallelism;
    // keyGroup × channels < 2^30: exact in a double, as in computeOperatorIndexForKeyGroup.
    return Math.floor((keyGroup * channels) / maxParallelism);
  }

  /** `HASH` */
  toString(): string {
    return "HASH";
  }
}
