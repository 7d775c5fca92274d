/**
 * Where a leader's other services serve, published beside its address so that the processes
 * that use them follow the leader (Flink publishes its REST endpoint's leader the same way).
 */
export interface LeaderEndpoints {
  /**
   * The leader's REST endpoint (`http://host:port/`): clients such as `sluice run`, `list` and
   * `cancel` follow the leader through it.
   */
  readonly restAddress?: string;
  /**
   * Where the leader's shuffle master serves the shuffle's own processes (`host:port`), for a
   * shuffle that has such processes (a remote shuffle's workers register with it): see
   * `ShuffleMaster.getAdvertisedAddress`.
   */
  readonly shuffleMasterAddress?: string;
}

/**
 * The party that runs for leadership (Flink's `LeaderContender`): a job manager. The election
 * calls it when it becomes leader and when it stops being leader; both may come from any event
 * turn, never twice in a row the same way.
 */
export interface LeaderContender {
  /**
   * This contender is leader now. `fencingToken` identifies this leadership: every write to the
   * high-availability stores carries it, and a write with a token that is no longer the current
   * leader's is refused (`SLUICE_ERR_HA_FENCED`). The contender confirms with
   * {@link LeaderElection.confirmLeadership} once it serves at its address.
   */
  grantLeadership(fencingToken: string): void;
  /**
   * This contender is no longer leader (its lease expired, the coordination service was
   * unreachable for too long, or the election was closed): it must stop acting as leader at once.
   */
  revokeLeadership(): void;
  /** The election failed in a way it cannot recover from (e.g. etcd refused the campaign). */
  handleError(error: Error): void;
}

/**
 * One contender's part in a leader election (Flink's `LeaderElection`): the job managers of a
 * cluster each start one, and at any time at most one of them holds the leadership.
 */
export interface LeaderElection {
  /**
   * Joins the election for `contender`. Resolves once the contender is campaigning, not when it
   * is leader: that comes through {@link LeaderContender.grantLeadership}.
   *
   * @throws IllegalStateError when called twice.
   */
  startLeaderElection(contender: LeaderContender): Promise<void>;
  /**
   * Publishes `address` (where the leader serves, e.g. `ws://10.0.0.1:6123`) and its other
   * `endpoints` (its REST endpoint's, its shuffle master's) for leader retrieval, under the
   * leadership `fencingToken`. Called again, it replaces what it published (the REST endpoint
   * may start after the leadership was confirmed).
   *
   * @throws FencingTokenError when `fencingToken` is no longer the current leadership.
   */
  confirmLeadership(
    fencingToken: string,
    address: string,
    endpoints?: LeaderEndpoints,
  ): Promise<void>;
  /** True while `fencingToken` is this contender's current leadership, as far as it knows. */
  hasLeadership(fencingToken: string): boolean;
  /** Leaves the election; a leader gives up its leadership (a standby takes over at once). */
  close(): Promise<void>;
}
