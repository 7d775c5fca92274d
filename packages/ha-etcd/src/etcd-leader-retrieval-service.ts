import { IllegalStateError } from "@sluice/core";
import type {
  LeaderInformation,
  LeaderRetrievalListener,
  LeaderRetrievalService,
} from "@sluice/runtime-api";
import type { EtcdKv } from "./client/etcd-kv.js";
import type { EtcdWatcher } from "./client/etcd-watcher.js";
import { JOB_MANAGER_ELECTION_PREFIX } from "./etcd-leader-election.js";
import { decodeLeaderAddresses } from "./leader-addresses.js";

/**
 * Follows the job managers' election on etcd: the leader is the candidate key with the lowest
 * create revision, and its value is what it confirmed (empty until it confirms, which reads as
 * "no leader"): its address and its other endpoints' (see leader-addresses.ts). It watches the
 * election's prefix and reads the leader again on every change (and when etcd compacted changes
 * the watch had not seen), telling the listener only when the leader (token or any address)
 * changed. A read that fails (etcd restarting) is tried again, with a pause from 100 ms doubling
 * to 2 s, until it works or the service stops: only a watch that cannot go on is reported to the
 * listener's `handleError`.
 */
export class EtcdLeaderRetrievalService implements LeaderRetrievalService {
  private listener: LeaderRetrievalListener | undefined;
  private watcher: EtcdWatcher | undefined;
  private stopped = false;
  private reported: LeaderInformation | undefined | null = null;
  /** Reads run one after another, so that reports come in order. */
  private reading: Promise<void> = Promise.resolve();
  private retryTimer: NodeJS.Timeout | undefined;
  private wakeRetry: (() => void) | undefined;

  constructor(private readonly kv: EtcdKv) {}

  async start(listener: LeaderRetrievalListener): Promise<void> {
    if (this.listener !== undefined) {
      throw new IllegalStateError("the leader retrieval was started already");
    }
    this.listener = listener;
    const revision = await this.readLeader();
    const watcher = await this.kv.watch(
      "watching the job managers' election",
      { key: JOB_MANAGER_ELECTION_PREFIX, prefix: true },
      (BigInt(revision) + 1n).toString(),
      {
        onEvents: () => this.refresh(),
        onResync: () => this.refresh(),
        onError: (error) => {
          if (!this.stopped) this.listener?.handleError(error);
        },
      },
    );
    if (this.stopped) {
      watcher.close();
      return;
    }
    this.watcher = watcher;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.watcher?.close();
    clearTimeout(this.retryTimer);
    this.wakeRetry?.();
    await this.reading;
  }

  private refresh(): void {
    this.reading = this.reading.then(() => this.readUntilDone());
  }

  /** Reads the leader, again after a pause while etcd cannot answer, until done or stopped. */
  private async readUntilDone(): Promise<void> {
    for (let pauseMs = 100; !this.stopped; pauseMs = Math.min(2000, pauseMs * 2)) {
      try {
        await this.readLeader();
        return;
      } catch {
        // etcd unreachable or restarting: the leader is read again once it answers.
      }
      await new Promise<void>((resolve) => {
        this.wakeRetry = resolve;
        this.retryTimer = setTimeout(resolve, pauseMs);
        this.retryTimer.unref();
      });
    }
  }

  /**
   * Reads the current leader, tells the listener when it changed; resolves with the revision.
   * A listener that throws has its error passed to its own `handleError`.
   */
  private async readLeader(): Promise<string> {
    const result = await this.kv.range("reading the job managers' leader", {
      key: JOB_MANAGER_ELECTION_PREFIX,
      prefix: true,
      sort: { target: "CREATE", order: "ASCEND" },
      limit: 1,
    });
    const kv = result.kvs[0];
    const leader =
      kv === undefined || kv.value === ""
        ? undefined
        : { fencingToken: kv.createRevision, ...decodeLeaderAddresses(kv.value) };
    const previous = this.reported;
    const changed =
      previous === null ||
      previous?.fencingToken !== leader?.fencingToken ||
      previous?.address !== leader?.address ||
      previous?.restAddress !== leader?.restAddress ||
      previous?.shuffleMasterAddress !== leader?.shuffleMasterAddress;
    if (changed && !this.stopped) {
      this.reported = leader;
      try {
        this.listener?.notifyLeaderAddress(leader);
      } catch (error) {
        this.listener?.handleError(error as Error);
      }
    }
    return result.revision;
  }
}
