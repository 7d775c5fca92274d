import type { LeaderContender, LeaderEndpoints } from "./leader-election.js";

/** The current leader, as leader retrieval reports it: its address and its other endpoints. */
export interface LeaderInformation extends LeaderEndpoints {
  /** The leadership's fencing token (see {@link LeaderContender.grantLeadership}). */
  readonly fencingToken: string;
  /** Where the leader serves, as it confirmed it (`ws://host:port`). */
  readonly address: string;
}

/** Told of every change of leader (Flink's `LeaderRetrievalListener`). */
export interface LeaderRetrievalListener {
  /** A new leader confirmed its address, or (`undefined`) there is no leader right now. */
  notifyLeaderAddress(leader: LeaderInformation | undefined): void;
  /** Retrieval failed for good (e.g. the coordination service refused the watch). */
  handleError(error: Error): void;
}

/**
 * Follows the leader of an election (Flink's `LeaderRetrievalService`): task managers and clients
 * use it to find the job manager, and to follow it to a new one after a failover.
 */
export interface LeaderRetrievalService {
  /**
   * Starts following; `listener` hears the current leader (if any) first, then every change.
   *
   * @throws IllegalStateError when called twice.
   */
  start(listener: LeaderRetrievalListener): Promise<void>;
  /** Stops following; the listener hears nothing more. Idempotent. */
  stop(): Promise<void>;
}
