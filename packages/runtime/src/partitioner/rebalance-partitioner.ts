import { type RandomSource, randomChannel } from "./random-source.js";
import { StreamPartitioner } from "./stream-partitioner.js";

/**
 * Distributes records evenly over all channels in round-robin order, as Flink's
 * `RebalancePartitioner`.
 *
 * The round starts at a random channel: if every producer instance started at channel 0, the first
 * records of all producers would pile onto the same consumer.
 */
export class RebalancePartitioner<T> extends StreamPartitioner<T> {
  readonly #random: RandomSource;
  #nextChannel = 0;

  /** @param random - draws the starting channel; defaults to `Math.random`. */
  constructor(random: RandomSource = Math.random) {
    super();
    this.#random = random;
  }

  /** Records the number of channels and draws a new random starting channel. */
  override setup(numberOfChannels: number): void {
    super.setup(numberOfChannels);
    this.#nextChannel = randomChannel(this.#random, numberOfChannels);
  }

  /** Returns the next channel in round-robin order; the first call returns the random start. */
  selectChannel(_record: T): number {
    const channel = this.#nextChannel;
    const next = channel + 1;
    this.#nextChannel = next === this.numberOfChannels ? 0 : next;
    return channel;
  }

  /** `REBALANCE` */
  toString(): string {
    return "REBALANCE";
  }
}
