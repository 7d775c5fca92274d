/**
 * Decides which output channel (subpartition) of a result partition each record goes to, as Flink's
 * `ChannelSelector`. A record writer owns one selector and calls it once per record.
 *
 * Implementations may keep state (a round-robin position), so a selector instance must not be
 * shared between writers.
 */
export interface ChannelSelector<T> {
  /**
   * Tells the selector how many channels it chooses from. Called by the writer before the first
   * {@link ChannelSelector.selectChannel}, and again if the number of channels changes.
   *
   * @param numberOfChannels - a positive integer: the writer's number of subpartitions.
   */
  setup(numberOfChannels: number): void;

  /**
   * Returns the channel for `record`, an integer in `[0, numberOfChannels)`. Never called when
   * {@link ChannelSelector.isBroadcast} is true: the writer then sends every record to all channels.
   */
  selectChannel(record: T): number;

  /** Whether every record goes to every channel, instead of to one chosen channel. */
  isBroadcast(): boolean;
}
