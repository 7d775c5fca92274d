import type { LocalBufferPool } from "@sluice/core";
import type { InputChannel } from "./input-channel.js";

/**
 * How many of a gate's buffers hold data (Flink's input buffer usage gauges): the remote
 * channels' exclusive buffers, and the gate's floating pool — of which buffers a channel borrowed
 * but has not filled yet count as free.
 */
export interface InputBufferUsage {
  /** Exclusive buffers holding data. */
  readonly exclusiveUsed: number;
  /** Exclusive buffers of all remote channels. */
  readonly exclusiveTotal: number;
  /** Floating buffers holding data. */
  readonly floatingUsed: number;
  /** Buffers of the floating pool. */
  readonly floatingTotal: number;
}

/** Remote channels report their exclusive and borrowed floating buffers for the usage gauges. */
interface ChannelBufferUsage {
  getExclusiveBufferUsage(): { readonly used: number; readonly total: number };
  getNumberOfAvailableFloatingBuffers?(): number;
}

/** The usage of a gate's buffers: those of its `channels` and of its `floatingPool`. */
export function measureInputBufferUsage(
  channels: readonly (InputChannel | undefined)[],
  floatingPool: LocalBufferPool | undefined,
): InputBufferUsage {
  let exclusiveUsed = 0;
  let exclusiveTotal = 0;
  let floatingBorrowedEmpty = 0;
  for (const channel of channels) {
    const owner = channel as Partial<ChannelBufferUsage> | undefined;
    const exclusive = owner?.getExclusiveBufferUsage?.();
    if (exclusive === undefined) continue;
    exclusiveUsed += exclusive.used;
    exclusiveTotal += exclusive.total;
    floatingBorrowedEmpty += owner?.getNumberOfAvailableFloatingBuffers?.() ?? 0;
  }
  const floatingTaken = floatingPool?.bestEffortGetNumOfUsedBuffers() ?? 0;
  return {
    exclusiveUsed,
    exclusiveTotal,
    floatingUsed: Math.max(0, floatingTaken - floatingBorrowedEmpty),
    floatingTotal: floatingPool?.getNumBuffers() ?? 0,
  };
}

/**
 * Flink's inPoolUsage: buffers in use over buffers the gate may use, counting the remote
 * channels' exclusive buffers together with the floating pool.
 */
export function inPoolUsage(usage: InputBufferUsage): number {
  const total = usage.exclusiveTotal + usage.floatingTotal;
  return total === 0 ? 0 : (usage.exclusiveUsed + usage.floatingUsed) / total;
}
