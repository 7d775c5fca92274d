import { emitMetricWarning } from "./metric-warning.js";
import { UPDATE_INTERVAL_SECONDS, type View } from "./view.js";

/**
 * Updates every registered {@link View} every {@link UPDATE_INTERVAL_SECONDS} (Flink's
 * `ViewUpdater`), on one timer per registry. The timer does not keep the process alive.
 */
export class ViewUpdater {
  private readonly views = new Set<View>();
  private timer: NodeJS.Timeout | undefined;

  /**
   * @param automatic true (default): update on a timer every 5 s, the first time 5 s after
   *   construction. False: only when {@link update} is called (tests drive a manual clock).
   */
  constructor(automatic = true) {
    if (automatic) {
      this.timer = setInterval(() => this.update(), UPDATE_INTERVAL_SECONDS * 1000);
      this.timer.unref();
    }
  }

  /** Starts updating `view`. */
  notifyOfAddedView(view: View): void {
    this.views.add(view);
  }

  /** Stops updating `view`. */
  notifyOfRemovedView(view: View): void {
    this.views.delete(view);
  }

  /** Updates every view now (what the timer does every 5 s). */
  update(): void {
    for (const view of this.views) {
      try {
        view.update();
      } catch (error) {
        emitMetricWarning(`a metric view failed to update: ${(error as Error)?.message ?? error}`);
      }
    }
  }

  /** Stops the timer. Idempotent. */
  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.views.clear();
  }
}
