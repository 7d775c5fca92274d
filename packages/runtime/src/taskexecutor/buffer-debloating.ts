import type { InputGate } from "@sluice/runtime-api";

/**
 * Buffer debloating: every `periodMs`, each gate measures its throughput and announces the
 * buffer size that holds the target of in-flight data (Flink's StreamTask debloating timer).
 * Returns what stops it. No period (debloating off) or no gate: nothing runs. The timer is
 * unref'd, as it alone must not keep a process alive.
 */
export function startBufferDebloating(
  gates: readonly InputGate[],
  periodMs: number | undefined,
): () => void {
  if (periodMs === undefined || gates.length === 0) return () => {};
  const timer = setInterval(() => {
    for (const gate of gates) gate.triggerDebloating?.();
  }, periodMs);
  timer.unref?.();
  return () => clearInterval(timer);
}
