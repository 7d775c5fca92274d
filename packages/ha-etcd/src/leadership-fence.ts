import { FencingTokenError } from "@sluice/runtime-api";
import type { EtcdKv } from "./client/etcd-kv.js";
import { type Compare, createRevisionIs, type Operation } from "./client/kv-requests.js";
import type { EtcdLeaderElection, Leadership } from "./etcd-leader-election.js";

/** The outcome of a fenced transaction that had extra conditions. */
export type FencedOutcome = "committed" | "condition-failed";

/**
 * Fences the stores' writes with the leadership of this process's election: each write is one
 * etcd transaction that applies only while the leader key still has the create revision it had
 * when this process was elected (its fencing token). A deposed leader (its lease expired, its key
 * deleted, a standby elected) is refused by etcd itself, however late its write arrives; a
 * refusal also ends the leadership at once.
 */
export class LeadershipFence {
  constructor(
    private readonly kv: EtcdKv,
    private readonly election: EtcdLeaderElection,
  ) {}

  /**
   * Applies `operations` atomically if this process still leads (and every `conditions` holds).
   *
   * @throws FencingTokenError naming `what` when this process is not, or no longer, the leader;
   *   HighAvailabilityUnavailableError when etcd cannot be reached.
   */
  async commit(
    what: string,
    operations: readonly Operation[],
    conditions: readonly Compare[] = [],
  ): Promise<FencedOutcome> {
    const leadership = this.leadership(what);
    const result = await this.kv.txn(what, {
      compare: [createRevisionIs(leadership.key, leadership.fencingToken), ...conditions],
      success: operations,
      failure: [{ range: { key: leadership.key } }],
    });
    if (result.succeeded) return "committed";
    const answer = result.responses[0];
    const leaderKey = answer !== undefined && "range" in answer ? answer.range.kvs[0] : undefined;
    if (leaderKey?.createRevision !== leadership.fencingToken) {
      const why = `its key ${leadership.key} is gone from etcd`;
      this.election.stepDown(leadership.fencingToken, why);
      throw new FencingTokenError(
        `${what} was refused: the leadership ${leadership.fencingToken} of this job manager is no longer current (${why}: the lease expired or the key was deleted, and another job manager may have been elected)`,
      );
    }
    return "condition-failed";
  }

  /**
   * The current leadership.
   *
   * @throws FencingTokenError naming `what` when this process does not lead.
   */
  leadership(what: string): Leadership {
    const leadership = this.election.currentLeadership();
    if (leadership === undefined) {
      throw new FencingTokenError(`${what} was refused: this job manager is not the leader`);
    }
    return leadership;
  }
}
