import type { Clock } from "../../clock/clock.js";
import type { RestartBackoffTimeStrategy } from "../restart-backoff-time-strategy.js";

/**
 * Flink's failure-rate strategy: the job restarts, after a fixed delay, as long as no more than
 * `maxFailuresPerInterval` failures fall within any `intervalMs`; one more within it fails the job.
 */
export class FailureRateRestartBackoffTimeStrategy implements RestartBackoffTimeStrategy {
  readonly name = "failure-rate";
  /** The times of the latest failures, at most one more than the interval allows. */
  private readonly failures: number[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly maxFailuresPerInterval: number,
    private readonly intervalMs: number,
    private readonly delayMs: number,
  ) {}

  notifyFailure(): void {
    if (this.isFull()) this.failures.shift();
    this.failures.push(this.clock.absoluteTimeMillis());
  }

  canRestart(): boolean {
    if (!this.isFull()) return true;
    const earliest = this.failures[0] as number;
    return this.clock.absoluteTimeMillis() - earliest > this.intervalMs;
  }

  getBackoffTime(): number {
    return this.delayMs;
  }

  private isFull(): boolean {
    return this.failures.length > this.maxFailuresPerInterval;
  }
}
