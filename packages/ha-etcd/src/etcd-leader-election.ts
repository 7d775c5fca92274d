import { IllegalStateError } from "@sluice/core";
import {
  FencingTokenError,
  type LeaderContender,
  type LeaderElection,
  type LeaderEndpoints,
} from "@sluice/runtime-api";
import type { EtcdKv } from "./client/etcd-kv.js";
import type { EtcdWatcher } from "./client/etcd-watcher.js";
import type { WatchEvent } from "./client/gateway-json.js";
import { absent, createRevisionIs } from "./client/kv-requests.js";
import { LeaseKeeper } from "./client/lease-keeper.js";
import { encodeLeaderAddresses } from "./leader-addresses.js";

/** Where the job managers' candidate keys live, relative to the cluster's namespace. */
export const JOB_MANAGER_ELECTION_PREFIX = "election/job-manager/";

/** The leadership this process holds: its candidate key and that key's create revision. */
export interface Leadership {
  /** The candidate key (relative to the cluster's namespace). */
  readonly key: string;
  /** The key's create revision, as a decimal string: the fencing token. */
  readonly fencingToken: string;
}

/** One campaign: a lease, the candidate key on it, and the watch of the election. */
interface Candidacy {
  readonly generation: number;
  readonly lease: LeaseKeeper;
  readonly key: string;
  /** The key's create revision: the fencing token once it leads. */
  readonly revision: string;
  watcher: EtcdWatcher | undefined;
}

/**
 * The job managers' election on etcd, as etcd's own Go client elects (`concurrency.Election`):
 * each candidate puts a key under {@link JOB_MANAGER_ELECTION_PREFIX} attached to its own lease
 * (`high-availability.etcd.lease-ttl`), and the candidate whose key has the lowest create
 * revision leads. Every candidate watches the election: a standby checks again when a key goes
 * (it leads once every older key is gone: the leader resigned or its lease expired), and a
 * candidate whose own key goes (deleted by hand, or its lease expired) stops at once, leader or
 * not. Each renewal of the lease is also followed by a check that the key is still there, so a
 * broken watch cannot hide its loss for longer than a third of the TTL.
 *
 * The fencing token is the leader key's create revision: every store write is a transaction that
 * compares it, so a deposed leader's writes are refused by etcd itself. The leader also gives up
 * on its own once a full TTL passed since the last renewal it sent that etcd confirmed (etcd
 * renewed the lease no earlier than that), before a standby can be elected. After any loss (lease
 * expired, key deleted, etcd unreachable and back) the contender campaigns again with a new lease
 * and key, so the cluster ends with exactly one leader, possibly the same process.
 */
export class EtcdLeaderElection implements LeaderElection {
  private contender: LeaderContender | undefined;
  private closed = false;
  private candidacy: Candidacy | undefined;
  private leading = false;
  /** When (Date.now()) the last renewal that etcd confirmed, with the key still there, was sent. */
  private renewedFrom = 0;
  private expiryTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Bumped for each campaign and each loss, so that a stale campaign's callbacks do nothing. */
  private generation = 0;
  /** Leases of lost candidacies whose revocation failed (etcd unreachable): revoked later. */
  private readonly staleLeases = new Set<LeaseKeeper>();
  private readonly revoking = new Set<LeaseKeeper>();
  /** A check of the election is running / another one is wanted after it. */
  private checking = false;
  private checkAgain: { generation: number; sentAt: number | undefined } | undefined;

  constructor(
    private readonly kv: EtcdKv,
    private readonly ttlSeconds: number,
    private readonly onWarning: (message: string) => void,
  ) {}

  async startLeaderElection(contender: LeaderContender): Promise<void> {
    if (this.contender !== undefined) {
      throw new IllegalStateError("the leader election was started already");
    }
    if (this.closed) throw new IllegalStateError("the leader election is closed");
    this.contender = contender;
    await this.campaign();
  }

  async confirmLeadership(
    fencingToken: string,
    address: string,
    endpoints?: LeaderEndpoints,
  ): Promise<void> {
    const candidacy = this.candidacy;
    if (!this.hasLeadership(fencingToken) || candidacy === undefined) {
      throw new FencingTokenError(
        `cannot confirm leadership ${fencingToken}: this job manager is not the leader (its leadership is ${this.candidacy?.revision ?? "none"}, leading: ${this.leading})`,
      );
    }
    const result = await this.kv.txn("confirming the leadership", {
      compare: [createRevisionIs(candidacy.key, fencingToken)],
      success: [
        {
          put: {
            key: candidacy.key,
            value: encodeLeaderAddresses(address, endpoints),
            lease: candidacy.lease.id,
          },
        },
      ],
    });
    if (!result.succeeded) {
      this.lose(candidacy.generation, `its candidate key ${candidacy.key} is gone from etcd`);
      throw new FencingTokenError(
        `cannot confirm leadership ${fencingToken}: its key ${candidacy.key} is gone from etcd (the lease expired or the key was deleted, and another job manager may lead)`,
      );
    }
  }

  hasLeadership(fencingToken: string): boolean {
    return this.currentLeadership()?.fencingToken === fencingToken;
  }

  /**
   * This process's leadership while it holds one (its lease not past a TTL since the last
   * confirmed renewal), else `undefined`. The stores fence their writes with it.
   */
  currentLeadership(): Leadership | undefined {
    const candidacy = this.candidacy;
    if (!this.leading || candidacy === undefined) return undefined;
    if (Date.now() >= this.renewedFrom + this.ttlSeconds * 1000) {
      // A pause (SIGSTOP) or a cut: the timer has not run yet, but the lease may be gone.
      this.lose(
        candidacy.generation,
        "its etcd lease was not renewed within high-availability.etcd.lease-ttl",
      );
      return undefined;
    }
    return { key: candidacy.key, fencingToken: candidacy.revision };
  }

  /**
   * Gives up `fencingToken`'s leadership at once and campaigns again: a store found its key gone
   * from etcd (a fenced write was refused). Does nothing when it is not the current leadership.
   */
  stepDown(fencingToken: string, why: string): void {
    const candidacy = this.candidacy;
    if (candidacy?.revision === fencingToken) this.lose(candidacy.generation, why);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.generation++;
    clearTimeout(this.retryTimer);
    const candidacy = this.candidacy;
    this.candidacy = undefined;
    this.stopLeading();
    candidacy?.watcher?.close();
    if (candidacy !== undefined) this.staleLeases.add(candidacy.lease);
    // Revoking the lease deletes the candidate key: a standby is elected at once, not a TTL later.
    await Promise.all([...this.staleLeases].map((lease) => lease.revoke().catch(() => undefined)));
    this.staleLeases.clear();
  }

  /** Puts this process's candidate key on a new lease and watches the election. */
  private async campaign(): Promise<void> {
    const generation = ++this.generation;
    this.revokeStaleLeases();
    const lease = await LeaseKeeper.grant(this.kv.client, this.ttlSeconds, {
      renewed: (sentAt) => this.renewed(generation, sentAt),
      lost: (reason) => this.lose(generation, `its etcd lease was lost: ${reason}`),
    });
    let entered: boolean;
    try {
      entered = await this.enter(generation, lease);
    } catch (error) {
      if (this.candidacy?.generation === generation) this.candidacy = undefined;
      this.retire(lease);
      throw error;
    }
    if (!entered) {
      // Closed, or lost while it was entering (a loss schedules the next campaign itself).
      this.retire(lease);
      return;
    }
    this.check(generation);
  }

  /**
   * Puts the candidate key on `lease` and starts watching the election from just after it;
   * false when the campaign was superseded meanwhile.
   */
  private async enter(generation: number, lease: LeaseKeeper): Promise<boolean> {
    if (generation !== this.generation) return false;
    const key = `${JOB_MANAGER_ELECTION_PREFIX}${lease.id}`;
    const put = await this.kv.txn("putting the candidate key", {
      compare: [absent(key)],
      success: [{ put: { key, value: "", lease: lease.id } }],
    });
    if (!put.succeeded) throw new IllegalStateError(`the candidate key ${key} exists already`);
    if (generation !== this.generation) return false;
    // The transaction wrote the key, so its revision is the key's create revision.
    const candidacy: Candidacy = {
      generation,
      lease,
      key,
      revision: put.revision,
      watcher: undefined,
    };
    this.candidacy = candidacy;
    // Every change after the key was put: the deletion of an older key or of this one.
    const watcher = await this.kv.watch(
      "watching the job managers' election",
      { key: JOB_MANAGER_ELECTION_PREFIX, prefix: true },
      (BigInt(put.revision) + 1n).toString(),
      {
        onEvents: (events) => this.changed(generation, events),
        onResync: () => this.check(generation),
        onError: (error) =>
          this.lose(generation, `its watch of the election failed: ${error.message}`),
      },
    );
    if (generation !== this.generation) {
      watcher.close();
      return false;
    }
    candidacy.watcher = watcher;
    return true;
  }

  /** Changes in the election: its own key deleted ends the candidacy, another's calls a check. */
  private changed(generation: number, events: readonly WatchEvent[]): void {
    const candidacy = this.candidacy;
    if (candidacy === undefined || candidacy.generation !== generation) return;
    const deletions = events.filter((event) => event.type === "DELETE");
    if (deletions.some((event) => event.kv.key === candidacy.key)) {
      this.lose(generation, `its candidate key ${candidacy.key} was deleted`);
      return;
    }
    if (deletions.length > 0 && !this.leading) this.check(generation);
  }

  /** A renewal of the lease: check that the key is still there (and whether it leads now). */
  private renewed(generation: number, sentAt: number): void {
    if (generation !== this.generation) return;
    if (this.candidacy === undefined) {
      // The grant of a campaign not yet finished.
      this.renewedFrom = sentAt;
      return;
    }
    this.check(generation, sentAt);
  }

  /**
   * Reads, in one transaction, whether this candidate's key is still there and which older key
   * is left: none makes it the leader, its key gone ends the candidacy. One check at a time; a
   * check wanted while one runs follows it.
   */
  private check(generation: number, sentAt?: number): void {
    if (this.checking) {
      const previous =
        this.checkAgain?.generation === generation ? this.checkAgain.sentAt : undefined;
      this.checkAgain = {
        generation,
        sentAt: sentAt === undefined ? previous : Math.max(sentAt, previous ?? 0),
      };
      return;
    }
    const candidacy = this.candidacy;
    if (candidacy === undefined || candidacy.generation !== generation) return;
    this.checking = true;
    void this.kv
      .txn("reading the job managers' election", {
        compare: [createRevisionIs(candidacy.key, candidacy.revision)],
        success: [
          {
            range: {
              key: JOB_MANAGER_ELECTION_PREFIX,
              prefix: true,
              maxCreateRevision: (BigInt(candidacy.revision) - 1n).toString(),
              sort: { target: "CREATE", order: "DESCEND" },
              limit: 1,
            },
          },
        ],
      })
      .then(
        (result) => {
          if (generation !== this.generation) return;
          if (!result.succeeded) {
            this.lose(generation, `its candidate key ${candidacy.key} is gone from etcd`);
            return;
          }
          if (sentAt !== undefined) this.renewedFrom = Math.max(this.renewedFrom, sentAt);
          const older = result.responses[0];
          if (older === undefined || !("range" in older) || older.range.kvs.length > 0) {
            // A standby: the watch reports when the key before this one goes.
            return;
          }
          const ttlMs = this.ttlSeconds * 1000;
          if (Date.now() + ttlMs / 2 > this.renewedFrom + ttlMs) {
            // Its last confirmed renewal is old (etcd was unreachable a while): leading now
            // would end a moment later. A renewal first; its check elects.
            candidacy.lease.renewNow();
            return;
          }
          this.elected(generation);
        },
        () => {
          // etcd unreachable: a leader steps down on its own a TTL after its last confirmed
          // renewal; the next renewal checks again.
        },
      )
      .finally(() => {
        this.checking = false;
        const again = this.checkAgain;
        this.checkAgain = undefined;
        if (again !== undefined) this.check(again.generation, again.sentAt);
      });
  }

  private elected(generation: number): void {
    const candidacy = this.candidacy;
    if (generation !== this.generation || this.closed || this.leading) return;
    if (candidacy === undefined) return;
    this.leading = true;
    const periodMs = Math.max(50, Math.floor((this.ttlSeconds * 1000) / 10));
    this.expiryTimer = setInterval(() => this.currentLeadership(), periodMs);
    this.expiryTimer.unref();
    this.contender?.grantLeadership(candidacy.revision);
  }

  /**
   * Ends the candidacy of `generation` (stops leading if it did, gives the lease up) and, unless
   * closed, campaigns again with a new lease after a pause.
   */
  private lose(generation: number, why: string): void {
    if (generation !== this.generation) return;
    this.generation++;
    const candidacy = this.candidacy;
    this.candidacy = undefined;
    const wasLeading = this.leading;
    this.stopLeading();
    if (candidacy !== undefined) {
      candidacy.watcher?.close();
      this.retire(candidacy.lease);
    }
    this.onWarning(
      wasLeading
        ? `the job manager lost its leadership: ${why}; campaigning again`
        : `the job manager's candidacy ended: ${why}; campaigning again`,
    );
    if (!this.closed) this.scheduleCampaign();
  }

  private stopLeading(): void {
    clearInterval(this.expiryTimer);
    this.expiryTimer = undefined;
    if (this.leading) {
      this.leading = false;
      this.contender?.revokeLeadership();
    }
  }

  /** Stops renewing `lease` and revokes it (its key goes at once, not a TTL later). */
  private retire(lease: LeaseKeeper): void {
    lease.stop();
    this.staleLeases.add(lease);
    this.revokeStaleLeases();
  }

  /**
   * Revokes the leases of ended candidacies; one that fails (etcd unreachable) is tried again at
   * the next campaign, so that a key of this process does not outlive its candidacy by a TTL.
   */
  private revokeStaleLeases(): void {
    for (const lease of this.staleLeases) {
      if (this.revoking.has(lease)) continue;
      this.revoking.add(lease);
      lease.revoke().then(
        () => {
          this.revoking.delete(lease);
          this.staleLeases.delete(lease);
        },
        () => this.revoking.delete(lease),
      );
    }
  }

  /** Campaigns again after a pause; an etcd that cannot be reached is retried until close(). */
  private scheduleCampaign(): void {
    clearTimeout(this.retryTimer);
    const retryMs = Math.max(100, Math.floor((this.ttlSeconds * 1000) / 3));
    this.retryTimer = setTimeout(() => {
      if (this.closed) return;
      this.campaign().catch((error: Error) => {
        if (this.closed) return;
        this.onWarning(`the job manager could not campaign for leadership: ${error.message}`);
        this.scheduleCampaign();
      });
    }, retryMs);
    this.retryTimer.unref();
  }
}
