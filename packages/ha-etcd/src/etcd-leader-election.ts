import { IllegalStateError } from "@sluice/core";
import { FencingTokenError, type LeaderContender, type LeaderElection } from "@sluice/runtime-api";
import type { Lease, Namespace } from "etcd3";
import { etcdCall } from "./etcd-call.js";

/** Where the job managers' candidate keys live, relative to the cluster's namespace. */
export const JOB_MANAGER_ELECTION_PREFIX = "election/job-manager/";

/** The leadership this process holds: its candidate key and that key's create revision. */
export interface Leadership {
  /** The candidate key (relative to the cluster's namespace). */
  readonly key: string;
  /** The key's create revision, as a decimal string: the fencing token. */
  readonly fencingToken: string;
}

/**
 * The job managers' election on etcd, as etcd's own Go client elects (`concurrency.Election`):
 * each candidate puts a key under {@link JOB_MANAGER_ELECTION_PREFIX} attached to its own lease
 * (`high-availability.etcd.lease-ttl`), and the candidate whose key has the lowest create
 * revision leads. A standby waits for the deletion of the key just before its own, so it becomes
 * leader once the leader resigns or its lease expires (kill -9, a pause, a cut from etcd). The
 * fencing token is the leader key's create revision: every store write is a transaction that
 * compares it, so a deposed leader's writes are refused by etcd itself. The leader also gives up
 * on its own once a full TTL passed since the last renewal it sent that etcd confirmed (etcd
 * renewed the lease no earlier than that), before a standby can be elected.
 */
export class EtcdLeaderElection implements LeaderElection {
  private contender: LeaderContender | undefined;
  private closed = false;
  private lease: Lease | undefined;
  private candidateKey: string | undefined;
  private candidateRevision: string | undefined;
  private leading = false;
  /** When (Date.now()) the last renewal that etcd confirmed was sent. */
  private renewedFrom = 0;
  private expiryTimer: NodeJS.Timeout | undefined;
  /** Bumped for each campaign, so that a stale campaign's callbacks do nothing. */
  private generation = 0;

  constructor(
    private readonly namespace: Namespace,
    private readonly ttlSeconds: number,
    private readonly endpoints: readonly string[],
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

  async confirmLeadership(fencingToken: string, address: string): Promise<void> {
    const key = this.candidateKey;
    const lease = this.lease;
    if (!this.hasLeadership(fencingToken) || key === undefined || lease === undefined) {
      throw new FencingTokenError(
        `cannot confirm leadership ${fencingToken}: this job manager is not the leader (its leadership is ${this.candidateRevision ?? "none"}, leading: ${this.leading})`,
      );
    }
    const leaseId = await lease.grant();
    const result = await etcdCall("confirming the leadership", this.endpoints, () =>
      this.namespace
        .if(key, "Create", "==", fencingToken)
        .then(this.namespace.put(key).value(address).lease(leaseId))
        .commit(),
    );
    if (!result.succeeded) {
      throw new FencingTokenError(
        `cannot confirm leadership ${fencingToken}: its key ${key} is gone from etcd (the lease expired and another job manager may lead)`,
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
    if (!this.leading || this.candidateKey === undefined || this.candidateRevision === undefined) {
      return undefined;
    }
    if (Date.now() >= this.renewedFrom + this.ttlSeconds * 1000) {
      // A pause (SIGSTOP) or a cut: the timer has not run yet, but the lease may be gone.
      this.lose("its etcd lease was not renewed within high-availability.etcd.lease-ttl");
      return undefined;
    }
    return { key: this.candidateKey, fencingToken: this.candidateRevision };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.generation++;
    const lease = this.lease;
    this.revoke();
    this.lease = undefined;
    // Revoking the lease deletes the candidate key: a standby is elected at once, not a TTL later.
    await lease?.revoke().catch(() => lease.release());
  }

  /** Puts this process's candidate key on a new lease and waits (in the background) to lead. */
  private async campaign(): Promise<void> {
    const generation = ++this.generation;
    const lease = this.namespace.lease(this.ttlSeconds, { autoKeepAlive: true });
    this.lease = lease;
    let firedAt = Date.now();
    this.renewedFrom = firedAt;
    lease.on("keepaliveFired", () => {
      firedAt = Date.now();
    });
    lease.on("keepaliveSucceeded", () => {
      if (generation === this.generation) this.renewedFrom = firedAt;
    });
    lease.on("lost", (error) => {
      if (generation === this.generation) this.lose(`its etcd lease was lost: ${error.message}`);
    });
    try {
      const leaseId = await etcdCall("granting the election lease", this.endpoints, () =>
        lease.grant(),
      );
      const key = `${JOB_MANAGER_ELECTION_PREFIX}${leaseId}`;
      const result = await etcdCall("putting the candidate key", this.endpoints, () =>
        this.namespace
          .if(key, "Create", "==", 0)
          .then(this.namespace.put(key).value("").lease(leaseId))
          .commit(),
      );
      if (generation !== this.generation) {
        await lease.revoke().catch(() => undefined);
        return;
      }
      this.candidateKey = key;
      this.candidateRevision = result.header.revision;
    } catch (error) {
      lease.release();
      throw error;
    }
    void this.waitForLeadership(generation).catch((error: Error) => {
      if (generation !== this.generation) return;
      this.onWarning(
        `the job manager's leader election failed, campaigning again: ${error.message}`,
      );
      this.lose(error.message);
    });
  }

  /** Waits until every candidate key created before this one is gone, then leads. */
  private async waitForLeadership(generation: number): Promise<void> {
    const revision = this.candidateRevision as string;
    while (generation === this.generation) {
      const older = await etcdCall("reading the election", this.endpoints, () =>
        this.namespace
          .getAll()
          .prefix(JOB_MANAGER_ELECTION_PREFIX)
          .maxCreateRevision((BigInt(revision) - 1n).toString())
          .sort("Create", "Descend")
          .limit(1)
          .exec(),
      );
      if (generation !== this.generation) return;
      const previous = older.kvs[0];
      if (previous === undefined) {
        this.elected(generation);
        return;
      }
      await this.waitForDeletion(previous.key.toString(), older.header.revision, generation);
    }
  }

  private async waitForDeletion(key: string, revision: string, generation: number): Promise<void> {
    const watcher = await etcdCall("watching the election", this.endpoints, () =>
      this.namespace.watch().key(key).startRevision(revision).only("delete").create(),
    );
    try {
      await new Promise<void>((resolve, reject) => {
        // A new campaign (after a lost lease) or close() ends this wait too.
        const check = setInterval(() => {
          if (generation !== this.generation) done();
        }, 100);
        const done = () => {
          clearInterval(check);
          resolve();
        };
        watcher.once("delete", done);
        watcher.once("end", done);
        watcher.once("error", (error) => {
          clearInterval(check);
          reject(error);
        });
      });
    } finally {
      await watcher.cancel().catch(() => undefined);
    }
  }

  private elected(generation: number): void {
    if (generation !== this.generation || this.closed) return;
    this.leading = true;
    const periodMs = Math.max(50, Math.floor((this.ttlSeconds * 1000) / 10));
    this.expiryTimer = setInterval(() => this.currentLeadership(), periodMs);
    this.expiryTimer.unref();
    this.contender?.grantLeadership(this.candidateRevision as string);
  }

  /** Stops leading (if it did), gives the lease up, and campaigns again unless closed. */
  private lose(why: string): void {
    const lease = this.lease;
    const wasLeading = this.leading;
    this.revoke();
    this.generation++;
    this.lease = undefined;
    void lease?.revoke().catch(() => lease.release());
    if (wasLeading) this.onWarning(`the job manager lost its leadership: ${why}`);
    if (!this.closed) this.recampaign();
  }

  private revoke(): void {
    clearInterval(this.expiryTimer);
    this.expiryTimer = undefined;
    this.candidateKey = undefined;
    this.candidateRevision = undefined;
    if (this.leading) {
      this.leading = false;
      this.contender?.revokeLeadership();
    }
  }

  /** Campaigns again after a pause; an etcd that cannot be reached is retried until close(). */
  private recampaign(): void {
    const retryMs = Math.max(100, Math.floor((this.ttlSeconds * 1000) / 3));
    const timer = setTimeout(() => {
      if (this.closed) return;
      this.campaign().catch((error: Error) => {
        this.onWarning(`the job manager could not campaign for leadership: ${error.message}`);
        if (!this.closed) this.recampaign();
      });
    }, retryMs);
    timer.unref();
  }
}
