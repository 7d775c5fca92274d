import { buffer, endOfPartition, type ScriptedItem } from "./scripted-input-gate.js";

// Input scripts that Flink's barrier handler tests (CheckpointBarrierTrackerTest and
// AlignedCheckpointsTest) run through both handlers: the same channels, buffers and barriers,
// with the barrier kind of the handler under test.

/** Makes the barrier item of checkpoint `id` on `channel`: aligned, or at-least-once. */
export type BarrierItem = (id: number, channel: number, timestamp?: bigint) => ScriptedItem;

/** One channel: checkpoints 1 to 6 between buffers, several of them back to back. */
export function singleChannelBarriers(barrier: BarrierItem): ScriptedItem[] {
  return [
    buffer(0),
    buffer(0),
    buffer(0),
    barrier(1, 0),
    buffer(0),
    buffer(0),
    buffer(0),
    buffer(0),
    barrier(2, 0),
    barrier(3, 0),
    buffer(0),
    buffer(0),
    barrier(4, 0),
    barrier(5, 0),
    barrier(6, 0),
    buffer(0),
  ];
}

/** Three channels: checkpoint 1 completes with data from several channels before its barriers. */
export function firstCheckpointOfThreeChannels(barrier: BarrierItem): ScriptedItem[] {
  return [
    buffer(0),
    buffer(2),
    buffer(0),
    barrier(1, 1),
    barrier(1, 2),
    buffer(2),
    buffer(1),
    barrier(1, 0),
  ];
}

/** Three channels: data from each, then checkpoint 2's barrier on every channel in order. */
export function secondCheckpointOfThreeChannels(barrier: BarrierItem): ScriptedItem[] {
  return [
    buffer(0),
    buffer(0),
    buffer(1),
    buffer(1),
    buffer(2),
    barrier(2, 0),
    barrier(2, 1),
    barrier(2, 2),
  ];
}

/**
 * Three channels and checkpoint 1 created at `created`, buffers of `size` bytes: the part of the
 * alignment before its last barrier (channels 1 and 0 delivered theirs, channel 2 not yet) ...
 */
export function alignmentStart(
  barrier: BarrierItem,
  size: number,
  created: bigint,
): ScriptedItem[] {
  return [
    buffer(0, size),
    buffer(1, size),
    buffer(2, size),
    barrier(1, 1, created),
    buffer(0, size),
    buffer(2, size),
    barrier(1, 0, created),
    buffer(2, size),
  ];
}

/** ... and the rest: channel 2's barrier, one more buffer of each channel, then their ends. */
export function alignmentEnd(barrier: BarrierItem, size: number, created: bigint): ScriptedItem[] {
  return [
    barrier(1, 2, created),
    buffer(0, size),
    buffer(1, size),
    buffer(2, size),
    endOfPartition(0),
    endOfPartition(1),
    endOfPartition(2),
  ];
}
