/**
 * Identifies one input channel of a task (Flink's InputChannelInfo): the gate it belongs to, as
 * the position of that gate in the task's list of inputs given to the barrier handler, and the
 * channel's index within that gate.
 */
export interface InputChannelInfo {
  /** Position of the channel's gate in the handler's `inputs`. */
  readonly gateIndex: number;
  /** Index of the channel within its gate, in `[0, numberOfInputChannels)`. */
  readonly channelIndex: number;
}
