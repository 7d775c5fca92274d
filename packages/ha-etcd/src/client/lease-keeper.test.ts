import { waitFor } from "@sluice/core/testing";
import { expect, it } from "vitest";
import { describeWithEtcd } from "../test-support/ha-fixture.js";
import { decodeLeaseRevoke } from "./gateway-json.js";
import { LeaseKeeper } from "./lease-keeper.js";

describeWithEtcd("a lease keeper on a real etcd", (fixture) => {
  it("renews its lease every third of the TTL, and a revoke deletes the keys on it at once", async () => {
    const kv = fixture.kv(`/lease-${fixture.clusterId()}/`);
    const renewals: number[] = [];
    const lost: string[] = [];
    const lease = await LeaseKeeper.grant(kv.client, 1, {
      renewed: (sentAt) => renewals.push(sentAt),
      lost: (reason) => lost.push(reason),
    });
    await kv.put("writing on the lease", { key: "k", value: "v", lease: lease.id });
    expect((await kv.get("reading", "k"))?.lease).toBe(lease.id);
    // Three TTLs: the key would be gone without the keepalives.
    await waitFor(() => renewals.length >= 9, { what: "nine renewals", timeoutMs: 10_000 });
    expect(await kv.get("reading", "k")).toBeDefined();
    await lease.revoke();
    expect(await kv.get("reading", "k")).toBeUndefined();
    // Revoking again (the lease is gone) is fine.
    await lease.revoke();
    expect(lost).toEqual([]);
  }, 30_000);

  it("reports once that etcd no longer knows its lease, and stops renewing it", async () => {
    const kv = fixture.kv();
    let renewals = 0;
    const lost: string[] = [];
    const lease = await LeaseKeeper.grant(kv.client, 1, {
      renewed: () => {
        renewals++;
      },
      lost: (reason) => lost.push(reason),
    });
    // Revoked behind its back (as when etcd expired it while this process was paused).
    await kv.client.call("revoking", "/v3/lease/revoke", { ID: lease.id }, decodeLeaseRevoke, {
      idempotent: true,
    });
    await waitFor(() => lost.length === 1, { what: "the lost lease", timeoutMs: 5000 });
    expect(lost[0]).toContain(`etcd answered that lease ${lease.id} is gone`);
    const renewedBefore = renewals;
    // A renewal would come every 333 ms: wait for four periods' worth of another lease's.
    let others = 0;
    const other = await LeaseKeeper.grant(kv.client, 1, {
      renewed: () => {
        others++;
      },
      lost: () => undefined,
    });
    await waitFor(() => others >= 4, { what: "another lease's renewals" });
    await other.revoke();
    expect(renewals).toBe(renewedBefore);
    expect(lost).toHaveLength(1);
  }, 30_000);
});
