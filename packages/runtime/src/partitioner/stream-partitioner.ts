import { IllegalArgumentError, IllegalStateError } from "@sluice/core";
import type { ChannelSelector } from "./channel-selector.js";

/**
 * Base class of Sluice's channel selectors, as Flink's `StreamPartitioner`: validates and keeps the
 * number of channels, and describes how the producer connects to its consumers.
 */
export abstract class StreamPartitioner<T> implements ChannelSelector<T> {
  #numberOfChannels = 0;

  /**
   * Records the number of channels to choose from.
   *
   * @throws IllegalArgumentError if `numberOfChannels` is not a positive integer.
   */
  setup(numberOfChannels: number): void {
    if (!Number.isInteger(numberOfChannels) || numberOfChannels < 1) {
      throw new IllegalArgumentError(
        `numberOfChannels must be a positive integer, got ${numberOfChannels}`,
      );
    }
    this.#numberOfChannels = numberOfChannels;
  }

  /**
   * The number of channels passed to {@link StreamPartitioner.setup}.
   *
   * @throws IllegalStateError before `setup` was called: selecting from zero channels would return
   *   NaN or an out-of-range index rather than fail.
   */
  protected get numberOfChannels(): number {
    if (this.#numberOfChannels === 0) {
      throw new IllegalStateError(
        `${this.toString()} partitioner: setup(numberOfChannels) must be called before selectChannel`,
      );
    }
    return this.#numberOfChannels;
  }

  /** Returns the channel for `record`, in `[0, numberOfChannels)`. */
  abstract selectChannel(record: T): number;

  /** Whether every record goes to every channel. False unless overridden. */
  isBroadcast(): boolean {
    return false;
  }

  /**
   * Whether each producer instance talks to a fixed subset of consumer instances (Flink's POINTWISE
   * distribution pattern) rather than to all of them (ALL_TO_ALL). Only forward and rescale are
   * pointwise; the job graph uses this to decide how to wire the edge.
   */
  isPointwise(): boolean {
    return false;
  }

  /** The partitioner's name as Flink prints it in plans: `FORWARD`, `HASH`, ... */
  abstract toString(): string;
}
