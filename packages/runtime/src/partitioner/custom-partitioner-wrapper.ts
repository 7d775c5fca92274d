import { describeValue, IllegalArgumentError } from "@sluice/core";
import type { KeySelector } from "./key-selector.js";
import { StreamPartitioner } from "./stream-partitioner.js";

/**
 * A user-defined partitioning function, as Flink's `Partitioner`: maps a key to a partition.
 */
export interface Partitioner<K> {
  /**
   * Returns the partition (channel) for `key`: an integer in `[0, numPartitions)`. Must be
   * deterministic if records of one key are to stay together.
   */
  partition(key: K, numPartitions: number): number;
}

/**
 * Routes each record through a user {@link Partitioner} applied to the record's key, as Flink's
 * `CustomPartitionerWrapper` behind `partitionCustom`.
 *
 * The partitioner's answer is validated: user code returning an index out of range would otherwise
 * surface much later as an obscure failure inside the writer.
 */
export class CustomPartitionerWrapper<T, K> extends StreamPartitioner<T> {
  readonly #partitioner: Partitioner<K>;
  readonly #keySelector: KeySelector<T, K>;

  /**
   * @param partitioner - chooses the channel from the key and the number of channels.
   * @param keySelector - extracts the key passed to the partitioner.
   */
  constructor(partitioner: Partitioner<K>, keySelector: KeySelector<T, K>) {
    super();
    this.#partitioner = partitioner;
    this.#keySelector = keySelector;
  }

  /**
   * Returns `partitioner.partition(key, numberOfChannels)`.
   *
   * @throws IllegalArgumentError if the partitioner returns anything but an integer in
   *   `[0, numberOfChannels)`, naming the value it returned. Errors thrown by the key selector or
   *   the partitioner propagate unchanged.
   */
  selectChannel(record: T): number {
    const n = this.numberOfChannels;
    const channel: unknown = this.#partitioner.partition(this.#keySelector(record), n);
    if (typeof channel !== "number" || !Number.isInteger(channel) || channel < 0 || channel >= n) {
      throw new IllegalArgumentError(
        `custom partitioner returned ${describeValue(channel)}, expected an integer channel in [0, ${n - 1}]`,
      );
    }
    // `| 0` turns a -0 from user arithmetic into 0.
    return channel | 0;
  }

  /** `CUSTOM` */
  toString(): string {
    return "CUSTOM";
  }
}
