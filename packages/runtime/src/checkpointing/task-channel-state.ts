import type { InputChannelInfo, ResultSubpartitionInfo } from "@sluice/runtime-api";

/**
 * The in-flight input of one channel in an unaligned checkpoint (Flink's
 * InputChannelStateHandle): the bytes of the channel's record stream the task had received and
 * not processed when the checkpoint was taken, in stream order. They may start and end inside a
 * record.
 */
export interface InputChannelStateHandle {
  readonly info: InputChannelInfo;
  readonly data: Uint8Array;
}

/**
 * The in-flight output of one subpartition in an unaligned checkpoint (Flink's
 * ResultSubpartitionStateHandle): the bytes the task had emitted into the subpartition and its
 * consumer had not received when the barrier overtook them, in stream order.
 */
export interface ResultSubpartitionStateHandle {
  readonly info: ResultSubpartitionInfo;
  readonly data: Uint8Array;
}

/**
 * A task's channel state of one unaligned checkpoint: what is replayed on restore, input before
 * any new input, output before any new record. Channels without in-flight data are left out.
 */
export interface TaskChannelState {
  readonly inputChannelState: readonly InputChannelStateHandle[];
  readonly resultSubpartitionState: readonly ResultSubpartitionStateHandle[];
}

/** Channel state without any data (an aligned checkpoint's). */
export const EMPTY_CHANNEL_STATE: TaskChannelState = Object.freeze({
  inputChannelState: Object.freeze([]),
  resultSubpartitionState: Object.freeze([]),
});

/** The bytes of in-flight data in `state`, input and output. */
export function channelStateSize(state: TaskChannelState): number {
  let size = 0;
  for (const handle of state.inputChannelState) size += handle.data.length;
  for (const handle of state.resultSubpartitionState) size += handle.data.length;
  return size;
}
