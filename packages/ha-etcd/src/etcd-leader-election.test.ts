import { ErrorCodes } from "@sluice/core";
import { expectRejection, waitFor } from "@sluice/core/testing";
import { FencingTokenError, type LeaderInformation } from "@sluice/runtime-api";
import { afterEach, expect, it } from "vitest";
import { JOB_MANAGER_ELECTION_PREFIX } from "./etcd-leader-election.js";
import { killCandidates, spawnCandidate } from "./test-support/candidate-process.js";
import { startGatewayProxy } from "./test-support/gateway-proxy.js";
import { describeWithEtcd, RecordingContender } from "./test-support/ha-fixture.js";

describeWithEtcd("the job managers' election on a real etcd", (fixture) => {
  afterEach(() => killCandidates());

  it("elects one of three contenders, and a standby when the leader leaves; never two at once", async () => {
    const services = await Promise.all([0, 1, 2].map(() => fixture.services()));
    let maxLeading = 0;
    const contenders: RecordingContender[] = [];
    const check = () => {
      maxLeading = Math.max(maxLeading, contenders.filter((c) => c.leading).length);
    };
    for (const s of services) {
      const contender = new RecordingContender(check);
      contenders.push(contender);
      await s.getJobManagerLeaderElection().startLeaderElection(contender);
    }
    const leaders = () => contenders.filter((c) => c.leading);
    for (let round = 0; round < 3; round++) {
      await waitFor(() => leaders().length === 1, { what: "one leader", timeoutMs: 15_000 });
      const leader = leaders()[0] as RecordingContender;
      const index = contenders.indexOf(leader);
      const election = services[index]?.getJobManagerLeaderElection();
      expect(election?.hasLeadership(leader.token as string)).toBe(true);
      // The others do not hold it.
      for (const [i, s] of services.entries()) {
        if (i !== index) {
          expect(s.getJobManagerLeaderElection().hasLeadership(leader.token as string)).toBe(false);
        }
      }
      if (round === 2) break;
      await services[index]?.close();
      expect(leader.revocations).toBe(1);
    }
    expect(maxLeading).toBe(1);
    // Each leadership got its own, increasing fencing token.
    const tokens = contenders.flatMap((c) => c.grants).map(BigInt);
    expect(tokens).toHaveLength(3);
    expect(new Set(tokens).size).toBe(3);
  }, 60_000);

  it("refuses a deposed leader's writes by fencing token, even before it notices", async () => {
    const first = await fixture.services();
    const second = await fixture.services();
    const a = new RecordingContender();
    const b = new RecordingContender();
    await first.getJobManagerLeaderElection().startLeaderElection(a);
    await waitFor(() => a.leading, { what: "the first leader", timeoutMs: 15_000 });
    await second.getJobManagerLeaderElection().startLeaderElection(b);
    const store = first.getJobGraphStore();
    await store.putJobGraph("job-1", { version: 1 });

    // Depose the leader behind its back: its candidate key goes (as when etcd expired its lease
    // while it was paused), so the standby is elected while the first still renews its lease.
    const admin = fixture.kv(first.keyPrefix);
    const { kvs } = await admin.range("reading the leader", {
      key: JOB_MANAGER_ELECTION_PREFIX,
      prefix: true,
      sort: { target: "CREATE", order: "ASCEND" },
      limit: 1,
    });
    await admin.deleteRange("deleting the leader's key", { key: kvs[0]?.key as string });
    await waitFor(() => b.leading, { what: "the standby's election", timeoutMs: 15_000 });

    const deposedToken = a.token;
    const refused = await store.putJobGraph("job-1", { version: 2 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Either etcd refused the transaction, or the deposed leader noticed first: both are fenced.
    expect(refused).toBeInstanceOf(FencingTokenError);
    expect((refused as FencingTokenError).code).toBe(ErrorCodes.HA_FENCED);
    if (deposedToken !== undefined) {
      await expectRejection(
        first.getJobManagerLeaderElection().confirmLeadership(deposedToken, "ws://old:1"),
        FencingTokenError,
        ErrorCodes.HA_FENCED,
      );
    }
    // The new leader's write goes through; the deposed one's never landed.
    await second.getJobGraphStore().putJobGraph("job-1", { version: 3 });
    expect(await first.getJobGraphStore().recoverJobGraph("job-1")).toEqual({ version: 3 });
  }, 60_000);

  it("elects a standby within about the lease TTL after kill -9 of the leader", async () => {
    const leader = spawnCandidate(fixture, "2s");
    await leader.waitFor(/^leader /);
    const standby = spawnCandidate(fixture, "2s");
    await standby.waitFor(/^campaigning/);
    const killedAt = Date.now();
    leader.child.kill("SIGKILL");
    await standby.waitFor(/^leader /, 20_000);
    const tookMs = Date.now() - killedAt;
    console.log(`a standby led ${tookMs} ms after kill -9 of the leader (lease TTL 2 s)`);
    // Not before the 2 s lease could expire, and not long after it.
    expect(tookMs).toBeGreaterThan(500);
    expect(tookMs).toBeLessThan(12_000);
    standby.child.kill("SIGKILL");
  }, 60_000);

  it("refuses the writes of a leader resumed after a SIGSTOP longer than its lease", async () => {
    const leader = spawnCandidate(fixture, "2s");
    await leader.waitFor(/^leader /);
    leader.write("put 1");
    await leader.waitFor(/^put-ok 1/);
    const standby = spawnCandidate(fixture, "2s");
    await standby.waitFor(/^campaigning/);
    leader.child.kill("SIGSTOP");
    await standby.waitFor(/^leader /, 20_000);
    standby.write("put 2");
    await standby.waitFor(/^put-ok 2/);
    // The old leader wakes up and writes at once, before any timer of its own could run.
    leader.write("put 3");
    leader.child.kill("SIGCONT");
    await leader.waitFor(/^put-refused 3 SLUICE_ERR_HA_FENCED/, 20_000);
    await leader.waitFor(/^revoked/, 20_000);
    const observer = await fixture.services({ "high-availability.cluster-id": leader.clusterId });
    expect(await observer.getJobGraphStore().recoverJobGraph("job-1")).toMatchObject({ value: 2 });
    leader.child.kill("SIGKILL");
    standby.child.kill("SIGKILL");
  }, 60_000);

  it("steps a leader down at once when its key is deleted; the standby leads and the old leader campaigns again as a standby", async () => {
    // A 15 s lease is renewed (and the key checked) every 5 s: only the watch of its own key
    // makes the leader notice sooner.
    const ttl = { "high-availability.etcd.lease-ttl": "15s" };
    const first = await fixture.services(ttl);
    const second = await fixture.services(ttl);
    const a = new RecordingContender();
    const b = new RecordingContender();
    await first.getJobManagerLeaderElection().startLeaderElection(a);
    await waitFor(() => a.leading, { what: "the first leader", timeoutMs: 15_000 });
    await second.getJobManagerLeaderElection().startLeaderElection(b);
    const admin = fixture.kv(first.keyPrefix);
    const candidates = async () =>
      (
        await admin.range("reading the election", {
          key: JOB_MANAGER_ELECTION_PREFIX,
          prefix: true,
          sort: { target: "CREATE", order: "ASCEND" },
        })
      ).kvs;
    await waitFor(async () => (await candidates()).length === 2, { what: "two candidates" });
    const [leaderKey] = await candidates();
    const deletedAt = Date.now();
    await admin.deleteRange("deleting the leader's key", { key: leaderKey?.key as string });
    await waitFor(() => a.revocations === 1 && b.leading, {
      what: "the deposed leader revoked and the standby elected",
      timeoutMs: 10_000,
    });
    expect(Date.now() - deletedAt).toBeLessThan(2500);
    expect(first.getJobManagerLeaderElection().hasLeadership(a.grants[0] as string)).toBe(false);
    // The old leader campaigns again with a new lease, behind the new leader.
    await waitFor(
      async () =>
        (await candidates()).some((kv) => BigInt(kv.createRevision) > BigInt(b.token as string)),
      { what: "the old leader's new candidate key", timeoutMs: 15_000 },
    );
    const [oldest] = await candidates();
    expect(oldest?.createRevision).toBe(b.token);
    expect(a.leading).toBe(false);
    expect(a.grants).toHaveLength(1);
    await expectRejection(
      first.getJobGraphStore().putJobGraph("job-1", { by: "a" }),
      FencingTokenError,
      ErrorCodes.HA_FENCED,
    );
    await second.getJobGraphStore().putJobGraph("job-1", { by: "b" });
    expect(first.getJobManagerLeaderElection().hasLeadership(b.token as string)).toBe(false);
    expect(
      fixture.warnings.some((w) => w.includes(`its candidate key ${leaderKey?.key} was deleted`)),
    ).toBe(true);
  }, 60_000);

  it("never lets a standby whose key was deleted lead without a key of its own", async () => {
    const ttl = { "high-availability.etcd.lease-ttl": "15s" };
    const first = await fixture.services(ttl);
    const second = await fixture.services(ttl);
    const a = new RecordingContender();
    const b = new RecordingContender();
    await first.getJobManagerLeaderElection().startLeaderElection(a);
    await waitFor(() => a.leading, { what: "the first leader", timeoutMs: 15_000 });
    await second.getJobManagerLeaderElection().startLeaderElection(b);
    const admin = fixture.kv(first.keyPrefix);
    const candidates = async () =>
      (
        await admin.range("reading the election", {
          key: JOB_MANAGER_ELECTION_PREFIX,
          prefix: true,
          sort: { target: "CREATE", order: "ASCEND" },
        })
      ).kvs;
    await waitFor(async () => (await candidates()).length === 2, { what: "two candidates" });
    // Both keys go in one revision: the standby sees the leader's key go together with its own.
    await admin.txn("deleting both keys", {
      compare: [],
      success: (await candidates()).map((kv) => ({ deleteRange: { key: kv.key } })),
    });
    await waitFor(() => a.revocations === 1, { what: "the leader revoked", timeoutMs: 10_000 });
    // Both campaign again with new keys; the older of the two leads, and only it.
    await waitFor(async () => (await candidates()).length === 2, {
      what: "two new candidates",
      timeoutMs: 15_000,
    });
    const [oldest] = await candidates();
    await waitFor(() => [a, b].some((c) => c.token === oldest?.createRevision), {
      what: "the holder of the oldest key leading",
      timeoutMs: 15_000,
    });
    expect([a, b].filter((c) => c.leading)).toHaveLength(1);
    // The standby was never granted a leadership whose key was already gone.
    for (const token of b.grants)
      expect(BigInt(token)).toBeGreaterThanOrEqual(BigInt(oldest?.createRevision as string));
  }, 60_000);

  it("does not take the leadership until etcd confirmed a renewal, after its renewals went unanswered for a TTL", async () => {
    const proxy = await startGatewayProxy(fixture.etcd().endpoint);
    try {
      const first = await fixture.services();
      const second = await fixture.services({
        "high-availability.etcd.endpoints": proxy.endpoint,
      });
      const a = new RecordingContender();
      const b = new RecordingContender();
      await first.getJobManagerLeaderElection().startLeaderElection(a);
      await waitFor(() => a.leading, { what: "the first leader", timeoutMs: 15_000 });
      await second.getJobManagerLeaderElection().startLeaderElection(b);
      await waitFor(() => proxy.paths.includes("/v3/watch"), { what: "the standby's watch" });
      // etcd keeps renewing the standby's lease, but the standby never hears it: after a TTL
      // its last confirmed renewal is too old to lead on.
      proxy.lose("/v3/lease/keepalive");
      await waitFor(() => proxy.lost() >= 4, { what: "a TTL of lost renewals", timeoutMs: 10_000 });
      const checks = proxy.paths.filter((path) => path === "/v3/kv/txn").length;
      await first.close();
      // The standby sees the leader's key go and checks the election...
      await waitFor(() => proxy.paths.filter((path) => path === "/v3/kv/txn").length > checks, {
        what: "the standby's check",
      });
      const lostBefore = proxy.lost();
      await waitFor(() => proxy.lost() > lostBefore, { what: "another lost renewal" });
      // ...but leads only once a renewal is confirmed again, and then stays leader.
      expect(b.grants).toEqual([]);
      proxy.heal();
      await waitFor(() => b.leading, { what: "the standby's election", timeoutMs: 10_000 });
      const token = b.token as string;
      await second.getJobGraphStore().putJobGraph("job-1", { by: "b" });
      expect(b.revocations).toBe(0);
      expect(second.getJobManagerLeaderElection().hasLeadership(token)).toBe(true);
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it("lets task managers follow the leader's address across a failover", async () => {
    const first = await fixture.services();
    const second = await fixture.services();
    const observer = await fixture.services();
    const seen: (LeaderInformation | undefined)[] = [];
    const retriever = observer.getJobManagerLeaderRetriever();
    await retriever.start({
      notifyLeaderAddress: (leader) => seen.push(leader),
      handleError: (error) => {
        throw error;
      },
    });
    expect(seen).toEqual([undefined]);
    const a = new RecordingContender();
    const b = new RecordingContender();
    await first.getJobManagerLeaderElection().startLeaderElection(a);
    await second.getJobManagerLeaderElection().startLeaderElection(b);
    await waitFor(() => a.leading, { what: "the first leader", timeoutMs: 15_000 });
    await first.getJobManagerLeaderElection().confirmLeadership(a.token as string, "ws://a:1");
    await waitFor(() => seen.at(-1)?.address === "ws://a:1", {
      what: "the first leader's address",
      timeoutMs: 10_000,
    });
    expect(seen.at(-1)?.fencingToken).toBe(a.token);
    await first.close();
    await waitFor(() => b.leading, { what: "the standby's election", timeoutMs: 15_000 });
    await second.getJobManagerLeaderElection().confirmLeadership(b.token as string, "ws://b:2");
    await waitFor(() => seen.at(-1)?.address === "ws://b:2", {
      what: "the new leader's address",
      timeoutMs: 10_000,
    });
    expect(seen.at(-1)?.fencingToken).toBe(b.token);
    expect(seen.map((leader) => leader?.address)).not.toContain("");
    await retriever.stop();
  }, 60_000);
});
