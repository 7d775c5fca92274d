import { LOW_THRESHOLD } from "./back-pressure-level.js";

/** What colours a vertex of the job graph: its back-pressure, or else how busy it is. */
export interface VertexColour {
  /** `back-pressured` when that is what the vertex mostly does, else `busy` (idle is 0 busy). */
  readonly by: "back-pressured" | "busy";
  /** The background, a CSS colour. */
  readonly background: string;
}

/**
 * Flink's web UI colours a vertex by its busiest and its most back-pressured subtask: a vertex
 * back-pressured for more of each second than it is busy (and past the OK level) is shaded red,
 * darker the more it is back-pressured; any other vertex is shaded on a scale of its own from
 * blue (idle) to orange (busy all the time). So the bottleneck — busy, and not back-pressured —
 * stands out from the red vertices upstream that wait for it.
 *
 * @param busyTimeMsPerSecond the busiest subtask's busy time (0–1000).
 * @param backPressuredTimeMsPerSecond the most back-pressured subtask's time (0–1000).
 */
export function vertexColour(
  busyTimeMsPerSecond: number,
  backPressuredTimeMsPerSecond: number,
): VertexColour {
  const busy = clamp(busyTimeMsPerSecond / 1000);
  const backPressured = clamp(backPressuredTimeMsPerSecond / 1000);
  if (backPressured > LOW_THRESHOLD && backPressured >= busy) {
    // From a light red at the LOW level to a deep red when back-pressured all the time.
    const lightness = Math.round(88 - 43 * backPressured);
    return { by: "back-pressured", background: `hsl(0, 75%, ${lightness}%)` };
  }
  // Hue 210 (blue) for idle to 30 (orange) for busy all the time.
  const hue = Math.round(210 - 180 * busy);
  return { by: "busy", background: `hsl(${hue}, 80%, 82%)` };
}

function clamp(ratio: number): number {
  return Number.isFinite(ratio) ? Math.min(1, Math.max(0, ratio)) : 0;
}
