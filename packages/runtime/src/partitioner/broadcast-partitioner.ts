import { IllegalStateError } from "@sluice/core";
import { StreamPartitioner } from "./stream-partitioner.js";

/**
 * Sends every record to every channel, as Flink's `BroadcastPartitioner`. The writer checks
 * {@link BroadcastPartitioner.isBroadcast} and copies each record to all channels itself (serializing
 * it once), so there is no single channel to select.
 */
export class BroadcastPartitioner<T> extends StreamPartitioner<T> {
  /**
   * Not supported: a broadcast record has no single channel.
   *
   * @throws IllegalStateError always; a writer calling this has ignored `isBroadcast()`.
   */
  selectChannel(_record: T): number {
    throw new IllegalStateError("broadcast selects all channels");
  }

  /** True: every record goes to every channel. */
  override isBroadcast(): boolean {
    return true;
  }

  /** `BROADCAST` */
  toString(): string {
    return "BROADCAST";
  }
}
