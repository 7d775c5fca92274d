import type { CheckpointingStatistics, JobDetailsInfo } from "@sluice/cluster";
import type { StandbyCluster, StandbyJobManager, StandbyLeader } from "./standby-cluster.js";

/** How often a due kill, and a failover's recovery, look at the leader again. */
const POLL_MS = 50;

/** One failover a {@link LeaderKills} caused, as measured. */
export interface JobManagerFailover {
  /** The killed leader's process id. */
  readonly killedPid: number;
  /** From the kill to leader retrieval naming a newly elected leader; `null` if none was. */
  readonly detectionMs: number | null;
  /** From the kill to the job running on the new leader; `null` if it did not run again. */
  readonly recoveryMs: number | null;
  /** The checkpoint the new leader restored the job from; `null` when it started over. */
  readonly restoredFromCheckpoint: number | null;
}

/** What a {@link LeaderKills} tells. */
export interface LeaderKillsEvents {
  /**
   * It killed the leader `intoMs` into the job (due at `dueMs`), whose latest stored checkpoint was
   * `latestCheckpoint`, and started `replacement` as a standby.
   */
  readonly onKilled?: (kill: {
    readonly killed: StandbyJobManager;
    readonly replacement: StandbyJobManager;
    readonly dueMs: number;
    readonly intoMs: number;
    readonly latestCheckpoint: number | undefined;
  }) => void;
  readonly onWarning?: (message: string) => void;
}

interface Pending {
  readonly killedPid: number;
  readonly fencingToken: string;
  readonly killedAt: number;
  detectionMs: number | null;
  recoveryMs: number | null;
  restoredFromCheckpoint: number | null;
}

/**
 * Flink's HA test on a {@link StandbyCluster}: SIGKILLs the leading job manager at each given time
 * into a job (one kill at a time: the next waits until the job runs on the new leader and, with
 * checkpoints, until that leader stored a checkpoint of its own, so that each failover restores
 * one), and times each failover: detection (a standby elected, as leader retrieval reports it) and
 * recovery (the job running on the new leader, as its REST endpoint reports it).
 */
export class LeaderKills {
  private readonly pending: Pending[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private kills: Promise<void> = Promise.resolve();
  private startedAt = 0;
  private stopped = false;
  private readonly stopListening: () => void;

  /**
   * @param jobId - the job the kills are timed by.
   * @param timesMs - when to kill, in ms into the job, ascending.
   * @param checkpointed - the job takes checkpoints: a leader is killed only once it stored one.
   */
  constructor(
    private readonly cluster: StandbyCluster,
    private readonly jobId: string,
    private readonly timesMs: readonly number[],
    private readonly checkpointed: boolean,
    private readonly events: LeaderKillsEvents = {},
  ) {
    this.stopListening = cluster.onLeaderChange((leader) => this.leaderChanged(leader));
  }

  /** The job runs on its first leader: the times count from now. */
  start(): void {
    this.startedAt = performance.now();
    for (const dueMs of this.timesMs) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.kills = this.kills.then(() => this.killWhenReady(dueMs));
      }, dueMs);
      this.timers.add(timer);
    }
  }

  /** The kills done so far. */
  get done(): number {
    return this.pending.length;
  }

  /** Each failover, measured. */
  failovers(): JobManagerFailover[] {
    return this.pending.map((f) => ({
      killedPid: f.killedPid,
      detectionMs: f.detectionMs === null ? null : Math.round(f.detectionMs),
      recoveryMs: f.recoveryMs === null ? null : Math.round(f.recoveryMs),
      restoredFromCheckpoint: f.restoredFromCheckpoint,
    }));
  }

  /** No more kills (the job ended); waits for a kill under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.stopListening();
    await this.kills;
  }

  private leaderChanged(leader: StandbyLeader): void {
    const now = performance.now();
    for (const failover of this.pending) {
      if (failover.detectionMs === null && failover.fencingToken !== leader.fencingToken) {
        failover.detectionMs = now - failover.killedAt;
        void this.awaitRecovery(failover, leader);
      }
    }
  }

  /** The new leader's REST endpoint says the job runs there: the failover recovered. */
  private async awaitRecovery(failover: Pending, leader: StandbyLeader): Promise<void> {
    while (!this.stopped && this.cluster.leader?.fencingToken === leader.fencingToken) {
      const jobManager = this.cluster.leader?.jobManager;
      const running = jobManager === undefined ? undefined : await this.runningOn(jobManager);
      if (running !== undefined) {
        failover.recoveryMs = performance.now() - failover.killedAt;
        failover.restoredFromCheckpoint = running.restoredFrom;
        return;
      }
      await this.sleep();
    }
  }

  /**
   * Whether the job runs on `jobManager` (taken over there), and the checkpoint it restored;
   * undefined when it does not, or the endpoint does not answer.
   */
  private async runningOn(
    jobManager: StandbyJobManager,
  ): Promise<{ restoredFrom: number | null } | undefined> {
    try {
      const job = await jobManager.rest.get<JobDetailsInfo>(`/jobs/${this.jobId}`);
      if (job.state !== "RUNNING") return undefined;
      const checkpoints = await jobManager.rest.get<CheckpointingStatistics>(
        `/jobs/${this.jobId}/checkpoints`,
      );
      return { restoredFrom: checkpoints.latest.restored?.id ?? null };
    } catch {
      // Not taken over yet (404), or not answering yet: look again.
      return undefined;
    }
  }

  /**
   * Kills the leader once it runs the job and, with checkpoints, stored a checkpoint of its own;
   * gives up when the job ended.
   */
  private async killWhenReady(dueMs: number): Promise<void> {
    while (!this.stopped) {
      const leader = this.cluster.leader;
      const jobManager = leader?.jobManager;
      const running = jobManager === undefined ? undefined : await this.runningOn(jobManager);
      if (leader !== undefined && jobManager !== undefined && running !== undefined) {
        const latest = this.checkpointed ? await this.latestStoredCheckpoint() : undefined;
        const ready =
          !this.checkpointed ||
          (latest !== undefined &&
            (running.restoredFrom === null || latest > running.restoredFrom));
        if (ready && !this.stopped && this.cluster.leader?.fencingToken === leader.fencingToken) {
          const intoMs = performance.now() - this.startedAt;
          const { killed, replacement } = await this.cluster.killLeader();
          this.pending.push({
            killedPid: killed.process.pid,
            fencingToken: leader.fencingToken,
            killedAt: performance.now(),
            detectionMs: null,
            recoveryMs: null,
            restoredFromCheckpoint: null,
          });
          this.events.onKilled?.({ killed, replacement, dueMs, intoMs, latestCheckpoint: latest });
          return;
        }
      }
      await this.sleep();
    }
  }

  /** The job's newest completed checkpoint in the HA store, if any. */
  private async latestStoredCheckpoint(): Promise<number | undefined> {
    try {
      const latest = await this.cluster.highAvailability
        .createCompletedCheckpointStore(this.jobId, 1)
        .getLatestCheckpoint();
      return latest === undefined ? undefined : Number(latest.checkpointId);
    } catch (error) {
      // etcd busy, or the job just removed: the next look reads again.
      this.events.onWarning?.(
        `could not read the latest stored checkpoint: ${(error as Error).message}`,
      );
      return undefined;
    }
  }

  /** A pause between two looks (short, and never cut: a loop checks `stopped` after it). */
  private sleep(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
