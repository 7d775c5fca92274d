import { StreamPartitioner } from "./stream-partitioner.js";

/**
 * Sends every record to channel 0, as Flink's `ForwardPartitioner`. A forward edge connects each
 * producer instance to exactly one consumer instance (same parallelism on both sides), so the writer
 * has a single channel and no choice to make.
 */
export class ForwardPartitioner<T> extends StreamPartitioner<T> {
  /** Always 0: the only channel of a forward edge. */
  selectChannel(_record: T): number {
    return 0;
  }

  /** True: each producer feeds one local consumer. */
  override isPointwise(): boolean {
    return true;
  }

  /** `FORWARD` */
  toString(): string {
    return "FORWARD";
  }
}
