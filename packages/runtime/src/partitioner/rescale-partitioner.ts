import { StreamPartitioner } from "./stream-partitioner.js";

/**
 * Distributes records round robin over the channels of a pointwise edge, as Flink's
 * `RescalePartitioner`. Unlike rebalance, each producer instance is wired only to a subset of the
 * consumer instances (for example 2 producers → 4 consumers gives each producer 2 channels), so
 * load is spread without an all-to-all network connection.
 *
 * The round starts at channel 0 of each producer's own subset.
 */
export class RescalePartitioner<T> extends StreamPartitioner<T> {
  #nextChannel = 0;

  /** Records the number of channels and restarts the round at channel 0. */
  override setup(numberOfChannels: number): void {
    super.setup(numberOfChannels);
    this.#nextChannel = 0;
  }

  /** Returns the next channel in round-robin order: 0, 1, ..., n − 1, 0, ... */
  selectChannel(_record: T): number {
    const n = this.numberOfChannels;
    const channel = this.#nextChannel;
    const next = channel + 1;
    this.#nextChannel = next === n ? 0 : next;
    return channel;
  }

  /** True: each producer feeds only its own subset of consumers. */
  override isPointwise(): boolean {
    return true;
  }

  /** `RESCALE` */
  toString(): string {
    return "RESCALE";
  }
}
