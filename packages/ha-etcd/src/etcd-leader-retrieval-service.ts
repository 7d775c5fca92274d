import { IllegalStateError } from "@sluice/core";
import type {
  LeaderInformation,
  LeaderRetrievalListener,
  LeaderRetrievalService,
} from "@sluice/runtime-api";
import type { EtcdKv } from "./client/etcd-kv.js";
import type { EtcdWatcher } from "./client/etcd-watcher.js";
import { JOB_MANAGER_ELECTION_PREFIX } from "./etcd-leader-election.js";

/**
 * Follows the job managers' election on etcd: the leader is the candidate key with the lowest
 * create revision, and its value is the address it confirmed (empty until it confirms, which
 * reads as "no leader"). It watches the election's prefix and reads the leader again on every
 * change (and when etcd compacted changes the watch had not seen), telling the listener only when
 * the leader (token or address) changed.
 */
export class EtcdLeaderRetrievalService implements LeaderRetrievalService {
  private listener: LeaderRetrievalListener | undefined;
  private watcher: EtcdWatcher | undefined;
  private stopped = false;
  private reported: LeaderInformation | undefined | null = null;
  /** Reads run one after another, so that reports come in order. */
  private reading: Promise<void> = Promise.resolve();

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
    await this.reading;
  }

  private refresh(): void {
    this.reading = this.reading
      .then(() => this.readLeader())
      .then(
        () => undefined,
        (error: Error) => {
          if (!this.stopped) this.listener?.handleError(error);
        },
      );
  }

  /** Reads the current leader, tells the listener when it changed; resolves with the revision. */
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
        : { fencingToken: kv.createRevision, address: kv.value };
    const previous = this.reported;
    const changed =
      previous === null ||
      previous?.fencingToken !== leader?.fencingToken ||
      previous?.address !== leader?.address;
    if (changed && !this.stopped) {
      this.reported = leader;
      this.listener?.notifyLeaderAddress(leader);
    }
    return result.revision;
  }
}
