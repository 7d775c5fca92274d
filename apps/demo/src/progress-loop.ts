/**
 * The progress line while the job runs: the task managers' metrics fetched every 500 ms, and the
 * line redrawn from them as often, until the job ends.
 */
import type { MetricFetcher } from "@sluice/cluster";
import { createProgressView, type ProgressSnapshot, type ProgressView } from "./progress.js";

/** How often the progress line is redrawn. */
const PROGRESS_RENDER_MS = 500;
/** How often the task managers' metrics are fetched (progress line and dashboard). */
const METRICS_FETCH_MS = 500;

export class ProgressLoop {
  private view: ProgressView | undefined;
  private renderTimer: NodeJS.Timeout | undefined;

  /**
   * @param fetcher - fetches the metrics the snapshots read (the dashboard reads them too).
   * @param snapshot - the job's progress now.
   */
  constructor(
    private readonly fetcher: MetricFetcher,
    private readonly out: NodeJS.WriteStream,
    private readonly snapshot: () => ProgressSnapshot,
  ) {}

  /** Starts fetching and drawing. */
  start(): void {
    this.fetcher.start(METRICS_FETCH_MS);
    this.view = createProgressView(this.out);
    this.renderTimer = setInterval(() => this.view?.update(this.snapshot()), PROGRESS_RENDER_MS);
  }

  /** Draws the line a last time, as the final one, and stops. */
  finish(): void {
    this.view?.update(this.snapshot(), true);
    this.stop();
  }

  /** Stops fetching and drawing (leaving the line as it is); a no-op when stopped. */
  stop(): void {
    this.fetcher.stop();
    clearInterval(this.renderTimer);
    this.renderTimer = undefined;
    this.view?.stop();
    this.view = undefined;
  }
}
