import { FencingTokenError } from "@sluice/runtime-api";
import type { DeleteBuilder, Namespace, PutBuilder } from "etcd3";
import { etcdCall } from "./etcd-call.js";
import type { EtcdLeaderElection, Leadership } from "./etcd-leader-election.js";

/** An extra condition of a fenced transaction: the key's mod revision, or that it is absent. */
export interface KeyCondition {
  readonly key: string;
  /** The key's mod revision as read, or `undefined` when it must not exist. */
  readonly modRevision: string | undefined;
}

/** The outcome of a fenced transaction that had extra conditions. */
export type FencedOutcome = "committed" | "condition-failed";

/**
 * Fences the stores' writes with the leadership of this process's election: each write is one
 * etcd transaction that applies only while the leader key still has the create revision it had
 * when this process was elected (its fencing token). A deposed leader (its lease expired, a
 * standby elected) is refused by etcd itself, however late its write arrives.
 */
export class LeadershipFence {
  constructor(
    private readonly namespace: Namespace,
    private readonly election: EtcdLeaderElection,
    private readonly endpoints: readonly string[],
  ) {}

  /**
   * Applies `operations` atomically if this process still leads (and every `conditions` holds).
   *
   * @throws FencingTokenError naming `what` when this process is not, or no longer, the leader.
   */
  async commit(
    what: string,
    operations: readonly (PutBuilder | DeleteBuilder)[],
    conditions: readonly KeyCondition[] = [],
  ): Promise<FencedOutcome> {
    const leadership = this.leadership(what);
    let comparison = this.namespace.if(leadership.key, "Create", "==", leadership.fencingToken);
    for (const condition of conditions) {
      comparison =
        condition.modRevision === undefined
          ? comparison.and(condition.key, "Create", "==", 0)
          : comparison.and(condition.key, "Mod", "==", condition.modRevision);
    }
    const result = await etcdCall(what, this.endpoints, () =>
      comparison
        .then(...operations)
        .else(this.namespace.get(leadership.key))
        .commit(),
    );
    if (result.succeeded) return "committed";
    const leaderKey = result.responses[0]?.response_range?.kvs[0];
    if (leaderKey?.create_revision !== leadership.fencingToken) {
      throw new FencingTokenError(
        `${what} was refused: the leadership ${leadership.fencingToken} of this job manager is no longer current (its key ${leadership.key} is gone from etcd: the lease expired and another job manager may have been elected)`,
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
