import type { ExecutionGraphInfo } from "./execution-graph-info.js";

/**
 * The jobs the REST endpoint shows (Flink's `ExecutionGraphInfoStore` with the running jobs of
 * its `Dispatcher`): every running job, and ended ones, as their final bodies, for at most
 * `jobstore.expiration-time` and at most `jobstore.max-capacity` of them (the oldest ended go
 * first).
 */
export class ExecutionGraphInfoStore {
  private readonly jobs = new Map<string, ExecutionGraphInfo>();
  /** When each ended job ended (its expiry counts from then), oldest first. */
  private readonly endedAt = new Map<string, number>();

  constructor(
    private readonly maxCapacity: number,
    private readonly expirationMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Adds a job the job manager deployed or takes over; it replaces an ended one of the same id
   * (a job this job manager ran before it lost its leadership, taken over again).
   */
  add(job: ExecutionGraphInfo): void {
    this.endedAt.delete(job.jid);
    this.jobs.set(job.jid, job);
    this.expire();
  }

  /** The job `jid` ended (it keeps only its final bodies from now on). */
  ended(jid: string): void {
    if (!this.jobs.has(jid)) return;
    this.endedAt.delete(jid);
    this.endedAt.set(jid, this.now());
    this.expire();
  }

  /** The job `jid`, running or ended and not expired. */
  get(jid: string): ExecutionGraphInfo | undefined {
    this.expire();
    return this.jobs.get(jid);
  }

  /** Every job, in the order they were deployed (or their takeover began). */
  all(): ExecutionGraphInfo[] {
    this.expire();
    return [...this.jobs.values()];
  }

  /** Drops the ended jobs beyond the capacity or older than the expiration time. */
  private expire(): void {
    const deadline = this.now() - this.expirationMs;
    for (const [jid, at] of this.endedAt) {
      if (at > deadline && this.endedAt.size <= this.maxCapacity) break;
      this.endedAt.delete(jid);
      this.jobs.delete(jid);
    }
  }
}
