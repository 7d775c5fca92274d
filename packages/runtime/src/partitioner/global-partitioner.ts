import { StreamPartitioner } from "./stream-partitioner.js";

/**
 * Sends every record to channel 0, i.e. to the first consumer instance, as Flink's
 * `GlobalPartitioner`. Used to funnel a stream into one instance (a global aggregate or sink);
 * unlike forward it is an all-to-all edge, so every producer sends to that same instance.
 */
export class GlobalPartitioner<T> extends StreamPartitioner<T> {
  /** Always 0: the first consumer instance. */
  selectChannel(_record: T): number {
    return 0;
  }

  /** `GLOBAL` */
  toString(): string {
    return "GLOBAL";
  }
}
