import { type RandomSource, randomChannel } from "./random-source.js";
import { StreamPartitioner } from "./stream-partitioner.js";

/**
 * Sends each record to a channel drawn uniformly at random, as Flink's `ShufflePartitioner`.
 */
export class ShufflePartitioner<T> extends StreamPartitioner<T> {
  readonly #random: RandomSource;

  /** @param random - draws the channel for each record; defaults to `Math.random`. */
  constructor(random: RandomSource = Math.random) {
    super();
    this.#random = random;
  }

  /** Returns a uniformly random channel in `[0, numberOfChannels)`. */
  selectChannel(_record: T): number {
    return randomChannel(this.#random, this.numberOfChannels);
  }

  /** `SHUFFLE` */
  toString(): string {
    return "SHUFFLE";
  }
}
