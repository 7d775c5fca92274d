import { ErrorCodes } from "@sluice/core";
import { expectRejection, waitFor } from "@sluice/core/testing";
import { FencingTokenError, type LeaderInformation } from "@sluice/runtime-api";
import { Etcd3 } from "etcd3";
import { afterEach, expect, it } from "vitest";
import { JOB_MANAGER_ELECTION_PREFIX } from "./etcd-leader-election.js";
import { killCandidates, spawnCandidate } from "./test-support/candidate-process.js";
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
    const admin = new Etcd3({ hosts: fixture.etcd().endpoint });
    try {
      const [leaderKey] = await admin
        .namespace(first.keyPrefix)
        .getAll()
        .prefix(JOB_MANAGER_ELECTION_PREFIX)
        .sort("Create", "Ascend")
        .limit(1)
        .keys();
      await admin
        .namespace(first.keyPrefix)
        .delete()
        .key(leaderKey as string);
    } finally {
      admin.close();
    }
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
