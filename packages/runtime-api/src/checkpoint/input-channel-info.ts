/**
 * Identifies one input channel of a task (Flink's InputChannelInfo): the gate, as its position
 * among the task's input gates (the order of the descriptors given to `createInputGates`), and
 * the channel's index within that gate.
 */
export interface InputChannelInfo {
  /** Position of the channel's gate among the task's input gates. */
  readonly gateIndex: number;
  /** Index of the channel within its gate, in `[0, numberOfInputChannels)`. */
  readonly channelIndex: number;
}
