import type { Clock } from "../../clock/clock.js";
import type { RestartBackoffTimeStrategy } from "../restart-backoff-time-strategy.js";

/** The settings of {@link ExponentialDelayRestartBackoffTimeStrategy} (`restart-strategy.exponential-delay.*`). */
export interface ExponentialDelaySettings {
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly backoffMultiplier: number;
  readonly resetBackoffThresholdMs: number;
  readonly jitterFactor: number;
  readonly attemptsBeforeResetBackoff: number;
}

/**
 * Flink's exponential-delay strategy: the first restart waits the initial backoff, each further
 * failure multiplies it, up to the max backoff; a random jitter of up to `jitterFactor` of it is
 * added or taken. When the job ran the reset threshold (plus the last backoff) without a failure,
 * the backoff starts over, and so does the count of attempts: more than
 * `attemptsBeforeResetBackoff` failures before a reset fail the job.
 */
export class ExponentialDelayRestartBackoffTimeStrategy implements RestartBackoffTimeStrategy {
  readonly name = "exponential-delay";
  private currentBackoffMs: number;
  private lastFailureAt: number | undefined;
  private attempts = 0;

  constructor(
    private readonly clock: Clock,
    private readonly settings: ExponentialDelaySettings,
    private readonly random: () => number = Math.random,
  ) {
    this.currentBackoffMs = settings.initialBackoffMs;
  }

  notifyFailure(): void {
    const now = this.clock.absoluteTimeMillis();
    const { initialBackoffMs, maxBackoffMs, backoffMultiplier, resetBackoffThresholdMs } =
      this.settings;
    const last = this.lastFailureAt;
    if (last === undefined || now - last >= resetBackoffThresholdMs + this.currentBackoffMs) {
      this.currentBackoffMs = initialBackoffMs;
      this.attempts = 0;
    } else {
      const grown = Math.floor(this.currentBackoffMs * backoffMultiplier);
      this.currentBackoffMs = Math.max(initialBackoffMs, Math.min(grown, maxBackoffMs));
    }
    this.attempts++;
    this.lastFailureAt = now;
  }

  canRestart(): boolean {
    return this.attempts <= this.settings.attemptsBeforeResetBackoff;
  }

  /** The current backoff, with a jitter in [-j, j] where j = jitter factor × backoff. */
  getBackoffTime(): number {
    const offset = Math.floor(this.currentBackoffMs * this.settings.jitterFactor);
    const jitter = offset === 0 ? 0 : Math.floor(this.random() * (2 * offset + 1)) - offset;
    return Math.min(this.currentBackoffMs + jitter, this.settings.maxBackoffMs);
  }
}
