/**
 * Flink's back-pressure levels, as its web UI shows them: the share of each second a subtask was
 * back-pressured (`backPressuredTimeMsPerSecond` / 1000), OK up to 10 %, LOW up to 50 %, HIGH
 * above. A vertex shows the level of its most back-pressured subtask.
 */
export type BackPressureLevel = "OK" | "LOW" | "HIGH";

/** Up to this ratio a subtask is OK. */
export const LOW_THRESHOLD = 0.1;
/** Up to this ratio a subtask is LOW; above it, HIGH. */
export const HIGH_THRESHOLD = 0.5;

/** The level of `backPressuredTimeMsPerSecond` (0–1000). */
export function backPressureLevel(backPressuredTimeMsPerSecond: number): BackPressureLevel {
  const ratio = backPressuredTimeMsPerSecond / 1000;
  if (ratio <= LOW_THRESHOLD) return "OK";
  if (ratio <= HIGH_THRESHOLD) return "LOW";
  return "HIGH";
}
