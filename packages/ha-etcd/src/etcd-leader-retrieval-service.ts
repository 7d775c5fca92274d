import { IllegalStateError } from "@sluice/core";
import type {
  LeaderInformation,
  LeaderRetrievalListener,
  LeaderRetrievalService,
} from "@sluice/runtime-api";
import type { Namespace, Watcher } from "etcd3";
import { etcdCall } from "./etcd-call.js";
import { JOB_MANAGER_ELECTION_PREFIX } from "./etcd-leader-election.js";

/**
 * Follows the job managers' election on etcd: the leader is the candidate key with the lowest
 * create revision, and its value is the address it confirmed (empty until it confirms, which
 * reads as "no leader"). It watches the election's prefix and reads the leader again on every
 * change, telling the listener only when the leader (token or address) changed.
 */
export class EtcdLeaderRetrievalService implements LeaderRetrievalService {
  private listener: LeaderRetrievalListener | undefined;
  private watcher: Watcher | undefined;
  private stopped = false;
  private reported: LeaderInformation | undefined | null = null;
  /** Reads run one after another, so that reports come in order. */
  private reading: Promise<void> = Promise.resolve();

  constructor(
    private readonly namespace: Namespace,
    private readonly endpoints: readonly string[],
  ) {}

  async start(listener: LeaderRetrievalListener): Promise<void> {
    if (this.listener !== undefined) {
      throw new IllegalStateError("the leader retrieval was started already");
    }
    this.listener = listener;
    const revision = await this.readLeader();
    const watcher = await etcdCall("watching the job managers' election", this.endpoints, () =>
      this.namespace
        .watch()
        .prefix(JOB_MANAGER_ELECTION_PREFIX)
        .startRevision((BigInt(revision) + 1n).toString())
        .create(),
    );
    if (this.stopped) {
      await watcher.cancel();
      return;
    }
    this.watcher = watcher;
    watcher.on("data", () => this.refresh());
    // A reconnected watch may have missed events: read the leader again.
    watcher.on("connected", () => this.refresh());
    watcher.on("error", (error: Error) => {
      if (!this.stopped) this.listener?.handleError(error);
    });
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.watcher?.cancel().catch(() => undefined);
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
    const result = await etcdCall("reading the job managers' leader", this.endpoints, () =>
      this.namespace
        .getAll()
        .prefix(JOB_MANAGER_ELECTION_PREFIX)
        .sort("Create", "Ascend")
        .limit(1)
        .exec(),
    );
    const kv = result.kvs[0];
    const address = kv?.value.toString() ?? "";
    const leader =
      kv === undefined || address === ""
        ? undefined
        : { fencingToken: kv.create_revision, address };
    const previous = this.reported;
    const changed =
      previous === null ||
      previous?.fencingToken !== leader?.fencingToken ||
      previous?.address !== leader?.address;
    if (changed && !this.stopped) {
      this.reported = leader;
      this.listener?.notifyLeaderAddress(leader);
    }
    return result.header.revision;
  }
}
