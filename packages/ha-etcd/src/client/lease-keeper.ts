import type { EtcdClient } from "./etcd-client.js";
import {
  decodeLeaseGrant,
  decodeLeaseKeepAlive,
  decodeLeaseRevoke,
  GatewayError,
  GRPC_NOT_FOUND,
} from "./gateway-json.js";

/** What a {@link LeaseKeeper} tells its owner. */
export interface LeaseListener {
  /**
   * etcd renewed the lease for a full TTL on a keepalive sent at `sentAt` (`Date.now()`): the
   * lease lives at least until `sentAt` + TTL.
   */
  renewed(sentAt: number): void;
  /** etcd answered that the lease is gone (it expired or was revoked): nothing renews it now. */
  lost(reason: string): void;
}

/**
 * One etcd lease and its keepalives (etcd's `Lease` service over the gateway): granted with a
 * TTL, renewed every third of it by one request each (`/v3/lease/keepalive`, bounded by the TTL;
 * while one is on its way the next periods are skipped), and revoked on request. A keepalive that fails (etcd unreachable)
 * is simply tried again at the next period: the owner decides how long it may go without a
 * renewal. A lease etcd no longer knows is reported once, and no longer renewed.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private renewing = false;
  private readonly periodMs: number;

  private constructor(
    private readonly client: EtcdClient,
    /** The lease's id, as a decimal string. */
    readonly id: string,
    readonly ttlSeconds: number,
    private readonly listener: LeaseListener,
  ) {
    this.periodMs = Math.max(50, Math.floor((ttlSeconds * 1000) / 3));
  }

  /**
   * Grants a lease of `ttlSeconds` and starts renewing it. The listener's `renewed` is called
   * first with the time the grant was sent.
   *
   * @throws HighAvailabilityUnavailableError when etcd cannot be reached or refuses.
   */
  static async grant(
    client: EtcdClient,
    ttlSeconds: number,
    listener: LeaseListener,
  ): Promise<LeaseKeeper> {
    const sentAt = Date.now();
    // Not sent again after a timeout: a second grant would leave an orphan lease (it would only
    // expire, but there is no need).
    const id = await client.call(
      "granting a lease",
      "/v3/lease/grant",
      { TTL: String(ttlSeconds) },
      decodeLeaseGrant,
      { idempotent: false },
    );
    const keeper = new LeaseKeeper(client, id, ttlSeconds, listener);
    listener.renewed(sentAt);
    keeper.schedule();
    return keeper;
  }

  /** Stops renewing (the lease expires a TTL later unless revoked). Idempotent. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /**
   * Stops renewing and revokes the lease, which deletes every key attached to it at once. A
   * lease etcd no longer knows counts as revoked.
   *
   * @throws HighAvailabilityUnavailableError when etcd cannot be reached (the lease then expires
   *   a TTL after its last renewal).
   */
  async revoke(): Promise<void> {
    this.stop();
    try {
      await this.client.call(
        `revoking lease ${this.id}`,
        "/v3/lease/revoke",
        { ID: this.id },
        decodeLeaseRevoke,
        { idempotent: true },
      );
    } catch (error) {
      const cause = (error as Error).cause;
      if (cause instanceof GatewayError && cause.grpcCode === GRPC_NOT_FOUND) return;
      throw error;
    }
  }

  /** Sends a keepalive now rather than at the next period (unless one is on its way). */
  renewNow(): void {
    if (this.stopped || this.renewing) return;
    void this.renew();
  }

  /** Keepalives go out every period from now on; one still on its way skips its turn. */
  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.schedule();
      if (!this.renewing) void this.renew();
    }, this.periodMs);
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    this.renewing = true;
    const sentAt = Date.now();
    let ttl: number;
    try {
      // A slow answer still counts (etcd renewed the lease when it got the request): it may
      // take up to a TTL, while the next periods are skipped.
      ttl = await this.client.call(
        `renewing lease ${this.id}`,
        "/v3/lease/keepalive",
        { ID: this.id },
        (json) => decodeLeaseKeepAlive(json, this.id),
        { idempotent: true, timeoutMs: this.ttlSeconds * 1000 },
      );
    } catch {
      // etcd unreachable or slow: tried again at the next period (the owner counts the time),
      // unless the client was closed.
      if (this.client.closed) this.stop();
      return;
    } finally {
      this.renewing = false;
    }
    if (this.stopped) return;
    if (ttl === 0) {
      this.stop();
      this.listener.lost(`etcd answered that lease ${this.id} is gone (it expired)`);
      return;
    }
    this.listener.renewed(sentAt);
  }
}
