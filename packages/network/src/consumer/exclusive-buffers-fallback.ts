import type { LocalBufferPool } from "@sluice/core";
import type { InputChannel } from "./input-channel.js";
import type { SingleInputGate } from "./single-input-gate.js";

/**
 * How a gate's remote channels get their buffers: `exclusive` (each takes its exclusive buffers
 * and the floating pool tops them up by backlog) or `floating-only` (none exclusive; every
 * buffer is borrowed from the floating pool by backlog, Flink's `buffers-per-channel: 0`).
 */
export type GateBuffersMode = "exclusive" | "floating-only";

/**
 * The per-gate way out when exclusive buffers cannot be guaranteed: instead of failing the task
 * with InsufficientBuffersError, the gate's channels read with floating buffers only.
 */
export interface ExclusiveBuffersFallback {
  /**
   * Why `exclusiveBuffers` exclusive buffers plus the gate's floating pool cannot be guaranteed
   * right now, or `undefined` when they can (then the gate keeps its exclusive buffers).
   */
  reasonToFallBack(exclusiveBuffers: number): string | undefined;
  /** Creates the floating pool of floating-only mode, which must serve every channel. */
  createFloatingOnlyBufferPool(): LocalBufferPool;
  /**
   * Told once when the gate falls back, with the reason and the floating-only pool it got (the
   * environment reports it).
   */
  onFallback(gate: SingleInputGate, reason: string, pool: LocalBufferPool): void;
}

/** Remote channels: the exclusive buffers they take at setup, and the switch to none. */
interface ExclusiveBuffersOwner {
  readonly initialCredit: number;
  useFloatingBuffersOnly(): void;
}

/** True for a channel that takes exclusive buffers at setup and can be switched to none. */
export function hasExclusiveBuffers(
  channel: InputChannel,
): channel is InputChannel & ExclusiveBuffersOwner {
  return typeof (channel as Partial<ExclusiveBuffersOwner>).useFloatingBuffersOnly === "function";
}
