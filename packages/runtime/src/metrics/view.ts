/**
 * How often views are updated, in seconds (Flink's `View.UPDATE_INTERVAL_SECONDS`): meters and
 * per-second times are computed from what happened in windows of this length.
 */
export const UPDATE_INTERVAL_SECONDS = 5;

/**
 * A metric whose value is computed in regular intervals rather than on every event (Flink's
 * `View`): `MeterView`, `TimerGauge`. The registry's {@link ViewUpdater} calls `update()` every
 * {@link UPDATE_INTERVAL_SECONDS}.
 */
export interface View {
  /** Recomputes the value from what happened since the last call. Must not throw. */
  update(): void;
}

/** True when `value` is a {@link View} (has an `update()` method). */
export function isView(value: unknown): value is View {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Partial<View>).update === "function"
  );
}
